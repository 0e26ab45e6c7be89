package campaign

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polebench/polebench/analysis"
)

// PolicyRow is one of the paper's numbers beside what a placement campaign (Placements:
// the paper's figure on etcd) measured at its point: poled's row where the report has
// the paper's campaign, and a cell per placement policy.
type PolicyRow struct {
	What        string
	Paper       float64
	PaperLeader string
	Poled       []PaperRow // the paper's table's rows of this number (one per leader)
	Campaign    string     // the placement campaign
	Policies    []PolicyCell
}

// PolicyCell is one policy's runs at the row's point that ended under one leader: the
// window under that leader (latency_ms.final) beside the model for it.
type PolicyCell struct {
	Policy   string
	Group    Group
	Measured *analysis.Agg
	Model    *float64
	Runs     []string // run directories, relative to the campaign's directory
}

// String is the cell as the tables show it: "57.0 (n=1), model 55.2, p1".
func (c PolicyCell) String() string {
	if c.Measured == nil {
		return "not measured"
	}
	s := fmtAgg(c.Measured) + ", model " + fmtPtr(c.Model)
	if w := c.Group.Who(); w != "" {
		s += ", " + w
	}
	return s
}

// placementField is the axis a placement campaign varies its policies by.
const placementField = "placement"

// policyRows sets each placement campaign's policies beside the paper's numbers of the
// figure it repeats (its name without "-etcd"), at the same point but for the oracle,
// which the policy takes the place of. sections are the report's campaigns and their
// rows, poled the paper's table.
func policyRows(sections []Section, rows map[string][]Row, poled []PaperRow) []PolicyRow {
	var out []PolicyRow
	for _, s := range sections {
		c := s.Campaign
		if !slices.Contains(Placements, c.Name) {
			continue
		}
		base := strings.TrimSuffix(c.Name, "-etcd")
		for _, n := range paperNumbers {
			if n.Campaign != base {
				continue
			}
			pr := PolicyRow{What: n.What, Paper: n.Value, PaperLeader: n.Leader, Campaign: c.Name}
			for _, r := range poled {
				if r.Campaign == base && r.What == n.What {
					pr.Poled = append(pr.Poled, r)
				}
			}
			metric := strings.Replace(n.Metric, ".after.", ".final.", 1)
			for _, p := range c.Points() {
				if !sameExceptOracle(p, n.At) {
					continue
				}
				gs := Groups(rows[c.Name], p, metric)
				if len(gs) == 0 {
					pr.Policies = append(pr.Policies, PolicyCell{Policy: p.Value(placementField)})
				}
				for _, g := range gs {
					cell := PolicyCell{Policy: p.Value(placementField), Group: g, Measured: g.Agg(metric)}
					if m := g.Agg(modelMetric(metric)); m != nil {
						cell.Model = &m.Mean
					}
					for _, rep := range g.Reps() {
						cell.Runs = append(cell.Runs, runLink(p, rep))
					}
					pr.Policies = append(pr.Policies, cell)
				}
			}
			out = append(out, pr)
		}
	}
	return out
}

// sameExceptOracle says whether p has the paper's point's values, the oracle aside.
func sameExceptOracle(p Point, at map[string]string) bool {
	for f, v := range at {
		if f != "oracle" && p.Value(f) != v {
			return false
		}
	}
	return true
}

// policyNames are the placement policies of the rows' campaign, in its order.
func policyNames(rows []PolicyRow) []string {
	var out []string
	for _, r := range rows {
		for _, c := range r.Policies {
			if !slices.Contains(out, c.Policy) {
				out = append(out, c.Policy)
			}
		}
	}
	return out
}

// cells are a row's cells for the policies named, the groups of one policy joined,
// each followed by its runs as link(run directory, repetition) writes them.
func (r PolicyRow) cells(policies []string, link func(dir string, rep int) string) []string {
	out := make([]string, len(policies))
	for i, name := range policies {
		var parts []string
		for _, c := range r.Policies {
			if c.Policy != name {
				continue
			}
			part := c.String()
			for j, d := range c.Runs {
				part += " " + link(d, c.Group.Rows[j].Rep)
			}
			parts = append(parts, part)
		}
		out[i] = orDash(strings.Join(parts, "; "))
	}
	return out
}

// poledCell is poled's measurement of the row's number, as the paper's table has it.
func (r PolicyRow) poledCell() string {
	var parts []string
	for _, p := range r.Poled {
		s := fmtAgg(p.Measured) + ", model " + fmtPtr(p.Model)
		if p.Group != nil && p.Group.Leader != 0 {
			s += ", " + p.Group.Who()
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "not in this report"
	}
	return strings.Join(parts, "; ")
}

// policyTitle is a placement campaign's table's heading.
func policyTitle(campaign string) string {
	return fmt.Sprintf("The paper's numbers on etcd, by placement policy (%s)", campaign)
}

// policiesMarkdown writes a table per placement campaign: the paper's number, poled's,
// and a column per policy.
func (r *Report) policiesMarkdown(b *strings.Builder, rel func(string) string) {
	for _, name := range Placements {
		var rows []PolicyRow
		for _, pr := range r.Policies {
			if pr.Campaign == name {
				rows = append(rows, pr)
			}
		}
		if len(rows) == 0 {
			continue
		}
		policies := policyNames(rows)
		fmt.Fprintf(b, "\n## %s\n\n", policyTitle(name))
		b.WriteString("The mean latency under the leader each run ended with (after placement where the controller moved it, else after the crash), beside the model for that leader; poled's as in the paper's numbers above.\n\n")
		b.WriteString("| setting | paper | poled |")
		for _, p := range policies {
			fmt.Fprintf(b, " etcd, %s |", p)
		}
		b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(policies)) + "\n")
		for _, pr := range rows {
			paper := fmt.Sprintf("%.1f", pr.Paper)
			if pr.PaperLeader != "" {
				paper += " (" + pr.PaperLeader + ")"
			}
			link := func(d string, rep int) string {
				return fmt.Sprintf("[rep%d](%s)", rep, rel(filepath.Join(r.sectionDir(name), d)))
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", pr.What, paper, pr.poledCell(), strings.Join(pr.cells(policies, link), " | "))
		}
	}
}

type htmlPolicyCell struct {
	Text string
	Runs []htmlLink
}

type htmlPolicyRow struct {
	Setting, Paper, Poled string
	Cells                 []htmlPolicyCell
}

type htmlPolicyTable struct {
	Title, Campaign string
	Names           []string
	Rows            []htmlPolicyRow
}

// htmlPolicies are report.html's tables of the policies, as policiesMarkdown's.
func (r *Report) htmlPolicies(rel func(string) string) []htmlPolicyTable {
	var out []htmlPolicyTable
	for _, name := range Placements {
		t := htmlPolicyTable{Title: policyTitle(name), Campaign: name}
		var rows []PolicyRow
		for _, pr := range r.Policies {
			if pr.Campaign == name {
				rows = append(rows, pr)
			}
		}
		if len(rows) == 0 {
			continue
		}
		t.Names = policyNames(rows)
		for _, pr := range rows {
			hr := htmlPolicyRow{Setting: pr.What, Paper: fmt.Sprintf("%.1f", pr.Paper), Poled: pr.poledCell()}
			if pr.PaperLeader != "" {
				hr.Paper += " (" + pr.PaperLeader + ")"
			}
			for _, p := range t.Names {
				var cell htmlPolicyCell
				var texts []string
				for _, c := range pr.Policies {
					if c.Policy != p {
						continue
					}
					texts = append(texts, c.String())
					for j, d := range c.Runs {
						cell.Runs = append(cell.Runs, htmlLink{Href: rel(filepath.Join(r.sectionDir(name), d)), Text: fmt.Sprintf("rep%d", c.Group.Rows[j].Rep)})
					}
				}
				cell.Text = orDash(strings.Join(texts, "; "))
				hr.Cells = append(hr.Cells, cell)
			}
			t.Rows = append(t.Rows, hr)
		}
		out = append(out, t)
	}
	return out
}
