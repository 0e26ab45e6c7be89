package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/analysis"
)

// Expect is a campaign's check of the paper's claim: at every x, the series Higher
// measures a larger Metric than the series Lower.
type Expect struct {
	Metric string   `yaml:"metric" json:"metric"`
	Higher string   `yaml:"higher" json:"higher"`
	Lower  string   `yaml:"lower" json:"lower"`
	At     []string `yaml:"at,omitempty" json:"at,omitempty"` // only these x values
}

// PaperRow is one number of the paper beside the model and the measurement: one row
// per leader the point's runs elected, never a mean across leaders.
type PaperRow struct {
	Campaign, What, Metric string
	Paper                  float64
	PaperLeader            string // whom the paper had leading ("" where it does not say)
	Model                  *float64
	Measured               *analysis.Agg
	// Group is the runs behind the row: the point's runs that elected one leader
	// (nil: the point was not measured).
	Group *Group
	// Winner is the tie-aware comparison with the model's winner (Campaign.Winner);
	// SameWinner is nil where no leader is compared (before the crash).
	Winner     string
	SameWinner *bool
	// Host counts the point's runs by the host's verdict (nil: no point measured it).
	Host *analysis.HostRuns
	// Runs are the group's run directories, relative to the campaign directory.
	Runs []string
}

// Diff is measured minus model.
func (r PaperRow) Diff() *float64 {
	if r.Model == nil || r.Measured == nil {
		return nil
	}
	d := r.Measured.Mean - *r.Model
	return &d
}

// Setting is the row's setting with the leader when the point's runs split.
func (r PaperRow) Setting() string {
	if r.Group != nil && r.Group.Split() {
		return r.What + ": " + r.Group.Who()
	}
	return r.What
}

// Section is one campaign in a report: its figures and whether they show the claim.
type Section struct {
	Campaign *Campaign
	Dir      string
	Figures  []Figure
	// Points are the figures' data: a row per point and leader elected.
	Points   []PointRow
	Verdict  string // what the measurement says about the claim
	Shown    *bool  // whether it shows the claim (nil: the campaign states no check)
	Runs     int
	Links    string
	Backend  string
	Host     string // HostLine: how many runs the host's verdict trusted
	HostRuns analysis.HostRuns
	Split    int // points whose runs elected more than one leader
	// Evidence says why the section has no evidence figures ("" when it has them).
	Evidence string
}

// PointRow is one point's runs that elected one leader, as the figures draw it.
type PointRow struct {
	Point  Point
	Group  Group
	Values []string // per metric of the section's figures: mean [95 % CI] (n)
	Model  []string // per metric: the model's mean for the leader elected ("" without)
	Runs   []string // the run directories, relative to the campaign directory
}

// Metrics are the metrics of a section's result figures, in order.
func (s Section) Metrics() []string {
	var out []string
	for _, f := range s.Figures {
		for _, m := range f.Metrics {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// Overview is the report's first paragraph: what ran, where, when, and how far the
// host let the numbers be trusted.
type Overview struct {
	Figures, Runs int
	Backends      []string
	Links         []string
	// First and Last bound the runs' files in time (the first run's start, the last
	// run's end); RunTime sums the runs' own durations (simulated time on sim).
	First, Last time.Time
	RunTime     time.Duration
	Host        analysis.HostRuns
	Shown       int // sections whose claim the runs show
	Checked     int // sections that state a claim to check
	Split       int // points whose runs elected more than one leader
}

// Report is what report.md and report.html show.
type Report struct {
	Title    string
	Version  string
	Machine  string
	When     string
	Overview Overview
	Rows     []PaperRow
	// Policies are the paper's numbers beside each placement policy's runs on etcd.
	Policies []PolicyRow
	Sections []Section
}

// BuildReport reads the campaign directories (each with campaign.yaml and
// results.csv), draws their figures and sets the paper's numbers beside the model
// and the measurement.
func BuildReport(dirs []string, version string) (*Report, error) {
	r := &Report{Title: "polebench: the POLE paper's evaluation, reproduced", Version: version,
		Machine: machine(), When: time.Now().Format("2006-01-02 15:04 MST")}
	ov := &r.Overview
	byName := map[string][]Row{}
	for _, dir := range dirs {
		c, err := LoadDir(dir)
		if err != nil {
			return nil, err
		}
		rows, err := ReadResults(dir, c)
		if err != nil {
			return nil, err
		}
		byName[c.Name] = rows
		figs, err := Draw(dir, c)
		var missing *EvidenceError
		if err != nil && !errors.As(err, &missing) {
			return nil, err
		}
		sec := Section{Campaign: c, Dir: dir, Figures: figs, Runs: len(rows), Host: HostLine(c, rows)}
		if missing != nil {
			sec.Evidence = missing.Error()
		}
		sec.Verdict, sec.Shown = c.verdict(rows)
		sec.Backend, sec.Links = runEnvironment(dir, c)
		sec.Points, sec.Split = c.pointRows(rows, sec.Metrics())
		for _, p := range c.Points() {
			h := PointHost(rows, p)
			sec.HostRuns.Runs, sec.HostRuns.Measured, sec.HostRuns.Trusted = sec.HostRuns.Runs+h.Runs, sec.HostRuns.Measured+h.Measured, sec.HostRuns.Trusted+h.Trusted
		}
		r.Sections = append(r.Sections, sec)
		pr, err := c.paperRows(dir, rows)
		if err != nil {
			return nil, err
		}
		r.Rows = append(r.Rows, pr...)

		ov.Figures++
		ov.Runs += len(rows)
		ov.Split += sec.Split
		ov.Host.Runs, ov.Host.Measured, ov.Host.Trusted = ov.Host.Runs+sec.HostRuns.Runs, ov.Host.Measured+sec.HostRuns.Measured, ov.Host.Trusted+sec.HostRuns.Trusted
		if sec.Backend != "" && !slices.Contains(ov.Backends, sec.Backend) {
			ov.Backends = append(ov.Backends, sec.Backend)
		}
		if sec.Links != "" && !slices.Contains(ov.Links, sec.Links) {
			ov.Links = append(ov.Links, sec.Links)
		}
		if sec.Shown != nil {
			ov.Checked++
			if *sec.Shown {
				ov.Shown++
			}
		}
		for _, row := range rows {
			rd := RunDir(dir, row.Point, row.Rep)
			if st, err := os.Stat(filepath.Join(rd, "spec.yaml")); err == nil && (ov.First.IsZero() || st.ModTime().Before(ov.First)) {
				ov.First = st.ModTime()
			}
			if st, err := os.Stat(filepath.Join(rd, "summary.json")); err == nil && st.ModTime().After(ov.Last) {
				ov.Last = st.ModTime()
			}
			if sp, err := c.SpecFor(row.Point, row.Rep); err == nil {
				ov.RunTime += sp.Duration
			}
		}
	}
	r.Policies = policyRows(r.Sections, byName, r.Rows)
	return r, nil
}

// pointRows are the figures' data, a row per point and leader elected, and how many
// points' runs elected more than one leader.
func (c *Campaign) pointRows(rows []Row, metrics []string) ([]PointRow, int) {
	var out []PointRow
	split := 0
	by := "" // the runs are grouped by who led the first metric's window
	if len(metrics) > 0 {
		by = metrics[0]
	}
	for _, p := range c.Points() {
		gs := Groups(rows, p, by)
		if len(gs) > 1 {
			split++
		}
		for _, g := range gs {
			pr := PointRow{Point: p, Group: g}
			for _, m := range metrics {
				pr.Values = append(pr.Values, fmtAgg(g.Agg(m)))
				model := ""
				if a := g.Agg(modelMetric(m)); a != nil {
					model = fmt.Sprintf("%.1f", a.Mean)
				}
				pr.Model = append(pr.Model, model)
			}
			for _, rep := range g.Reps() {
				pr.Runs = append(pr.Runs, runLink(p, rep))
			}
			out = append(out, pr)
		}
	}
	return out, split
}

// paperRows finds, for each of the paper's numbers this campaign measures, the point
// it belongs to, and gives a row per leader its runs elected.
func (c *Campaign) paperRows(dir string, rows []Row) ([]PaperRow, error) {
	var out []PaperRow
	for _, n := range paperNumbers {
		if n.Campaign != c.Name {
			continue
		}
		base := PaperRow{Campaign: c.Name, What: n.What, Metric: n.Metric, Paper: n.Value, PaperLeader: n.Leader}
		var found []PaperRow
		for _, p := range c.Points() {
			ok := true
			for f, v := range n.At {
				ok = ok && p.Value(f) == v
			}
			if !ok {
				continue
			}
			var host *analysis.HostRuns
			if h := PointHost(rows, p); h.Runs > 0 {
				host = &h
			}
			for _, g := range Groups(rows, p, n.Metric) {
				row := base
				row.Host = host
				row.Group = &g
				row.Measured = g.Agg(n.Metric)
				if m := g.Agg(modelMetric(n.Metric)); m != nil {
					row.Model = &m.Mean
				}
				for _, rep := range g.Reps() {
					row.Runs = append(row.Runs, filepath.ToSlash(filepath.Join("runs", p.Dir(), fmt.Sprintf("rep%d", rep))))
				}
				if strings.Contains(n.Metric, ".after.") || !strings.HasPrefix(n.Metric, "latency_ms.") {
					v, same, err := c.Winner(dir, g)
					if err != nil {
						return nil, err
					}
					row.Winner = v
					if g.Leader != 0 {
						row.SameWinner = &same
					}
				}
				found = append(found, row)
			}
			break
		}
		if len(found) == 0 {
			found = []PaperRow{base}
		}
		out = append(out, found...)
	}
	return out, nil
}

// modelMetric is the model's column beside a latency mean ("" for other metrics).
func modelMetric(metric string) string {
	if strings.HasPrefix(metric, "latency_ms.") && strings.HasSuffix(metric, ".mean") {
		return strings.TrimSuffix(metric, ".mean") + ".model_ms"
	}
	return ""
}

// verdict says whether the runs show what the campaign expects. Runs that elected
// different leaders are compared group by group, never averaged together.
func (c *Campaign) verdict(rows []Row) (string, *bool) {
	e := c.Expect
	if e == nil {
		return "", nil
	}
	xField, sField := c.axes()
	if sField == "" { // one varied field: Higher and Lower are two of its values
		xField, sField = "", xField
	}
	xs := c.values(xField)
	if xField == "" {
		xs = []string{""}
	}
	shown, compared := 0, 0
	var notes []string
	name := func(series string, g Group) string {
		if g.Split() {
			return fmt.Sprintf("%s (%s)", series, g.Who())
		}
		return series
	}
	for _, x := range xs {
		if len(e.At) > 0 && !slices.Contains(e.At, x) {
			continue
		}
		groups := func(series string) []Group {
			var out []Group
			for _, p := range c.pointsAt(xField, x, sField, series) {
				for _, g := range Groups(rows, p, e.Metric) {
					if g.Agg(e.Metric) != nil {
						out = append(out, g)
					}
				}
			}
			return out
		}
		his, los := groups(e.Higher), groups(e.Lower)
		for _, hg := range his {
			for _, lg := range los {
				compared++
				h, l := hg.Agg(e.Metric).Mean, lg.Agg(e.Metric).Mean
				if h > l {
					shown++
				}
				at := ""
				if xField != "" {
					at = valueLabel(xField, x) + ": "
				}
				notes = append(notes, fmt.Sprintf("%s%s %.1f vs %s %.1f", at, name(e.Higher, hg), h, name(e.Lower, lg), l))
			}
		}
	}
	ok := compared > 0 && shown == compared
	switch {
	case compared == 0:
		return "not measured", nil
	case ok:
		return fmt.Sprintf("shown: %s is above %s at every point (%s)", e.Higher, e.Lower, strings.Join(notes, "; ")), &ok
	}
	return fmt.Sprintf("NOT shown at %d of %d comparisons (%s)", compared-shown, compared, strings.Join(notes, "; ")), &ok
}

// runEnvironment reads the backend and the link emulation from a finished run.
func runEnvironment(dir string, c *Campaign) (backend, links string) {
	for _, p := range c.Points() {
		b, err := os.ReadFile(filepath.Join(RunDir(dir, p, 1), "servers.json"))
		if err != nil {
			continue
		}
		var v struct{ Backend, Links string }
		if json.Unmarshal(b, &v) == nil {
			return v.Backend, v.Links
		}
	}
	return "", ""
}

func machine() string {
	var u unix.Utsname
	kernel := "unknown kernel"
	if unix.Uname(&u) == nil {
		kernel = "Linux " + unix.ByteSliceToString(u.Release[:])
	}
	return fmt.Sprintf("%d CPUs, %s, %s", runtime.NumCPU(), kernel, runtime.Version())
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func fmtAgg(a *analysis.Agg) string {
	if a == nil {
		return "not measured"
	}
	if a.CI95 != nil {
		return fmt.Sprintf("%.1f [%.1f, %.1f] (n=%d)", a.Mean, a.CI95.Low, a.CI95.High, a.N)
	}
	return fmt.Sprintf("%.1f (n=%d)", a.Mean, a.N)
}

func fmtHost(h *analysis.HostRuns) string {
	if h == nil {
		return "-"
	}
	return h.String()
}

func fmtPaper(r PaperRow) string {
	s := fmt.Sprintf("%.1f", r.Paper)
	if r.PaperLeader != "" {
		s += " (" + r.PaperLeader + ")"
	}
	return s
}

func fmtWinner(r PaperRow) string {
	if r.Winner == "" {
		return "-"
	}
	return r.Winner
}

func (s Section) title() string {
	if s.Campaign.Title != "" {
		return s.Campaign.Title
	}
	return s.Campaign.Name
}

// anchor is the section's id in report.html.
func (s Section) anchor() string { return "fig-" + s.Campaign.Name }

// WriteMarkdown writes report.md into dir (figures are referenced beside it, each
// point's runs linked).
func (r *Report) WriteMarkdown(dir string) error {
	var b strings.Builder
	rel := func(p string) string {
		x, err := filepath.Rel(dir, p)
		if err != nil {
			return filepath.ToSlash(p)
		}
		return filepath.ToSlash(x)
	}
	fmt.Fprintf(&b, "# %s\n\npolebench %s, %s, %s.\n\n", r.Title, r.Version, r.Machine, r.When)
	for _, l := range r.overviewLines() {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	b.WriteString("\n## The paper's numbers\n\n")
	b.WriteString("| setting | paper | model | measured (mean, 95 % CI) | measured - model | winner | host | runs |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		var runs []string
		for i, l := range row.Runs {
			runs = append(runs, fmt.Sprintf("[%d](%s)", i+1, rel(filepath.Join(r.sectionDir(row.Campaign), l))))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Setting(), fmtPaper(row), fmtPtr(row.Model), fmtAgg(row.Measured),
			fmtPtr(row.Diff()), fmtWinner(row), fmtHost(row.Host), strings.Join(runs, " "))
	}
	r.policiesMarkdown(&b, rel)
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "\n## %s\n\n", s.title())
		fmt.Fprintf(&b, "%d runs on the %s backend, links: %s; spec %s with %s; %s per point.\n\n", s.Runs, s.Backend, s.Links,
			s.Campaign.Spec, orDash(strings.Join(s.Campaign.Settings, " ")), plural(s.Campaign.Repetitions, "repetition"))
		if s.Host != "" {
			fmt.Fprintf(&b, "%s.\n\n", s.Host)
		}
		if s.Campaign.Claim != "" {
			fmt.Fprintf(&b, "The paper: %s\n\n", s.Campaign.Claim)
		}
		if s.Verdict != "" {
			fmt.Fprintf(&b, "This run: %s\n\n", s.Verdict)
		}
		for _, f := range s.Figures {
			fmt.Fprintf(&b, "![%s](%s)\n\n*%s*\n\n", f.Title, rel(filepath.Join(s.Dir, f.PNG)), f.Caption)
		}
		if s.Evidence != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Evidence)
		}
		metrics := s.Metrics()
		fmt.Fprintf(&b, "| point | elected | runs |")
		for _, m := range metrics {
			fmt.Fprintf(&b, " %s | model |", MetricLabel(m))
		}
		b.WriteString("\n|---|---|---|" + strings.Repeat("---|---|", len(metrics)) + "\n")
		for _, pr := range s.Points {
			var runs []string
			for i, l := range pr.Runs {
				runs = append(runs, fmt.Sprintf("[%d](%s)", pr.Group.Rows[i].Rep, rel(filepath.Join(s.Dir, l))))
			}
			fmt.Fprintf(&b, "| %s | %s | %s |", pointWords(pr.Point), whoOrDash(pr.Group), strings.Join(runs, " "))
			for i := range metrics {
				fmt.Fprintf(&b, " %s | %s |", pr.Values[i], orDash(pr.Model[i]))
			}
			b.WriteString("\n")
		}
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

func whoOrDash(g Group) string {
	if w := g.Who(); w != "" {
		return w
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sectionDir is the directory of the campaign of that name.
func (r *Report) sectionDir(name string) string {
	for _, s := range r.Sections {
		if s.Campaign.Name == name {
			return s.Dir
		}
	}
	return ""
}

// overviewLines are the overview in sentences.
func (r *Report) overviewLines() []string {
	ov := r.Overview
	var out []string
	out = append(out, fmt.Sprintf("%d runs in %d figures, on the %s backend; links: %s.", ov.Runs, ov.Figures,
		orDash(strings.Join(ov.Backends, ", ")), orDash(strings.Join(ov.Links, ", "))))
	if !ov.First.IsZero() {
		out = append(out, fmt.Sprintf("Ran from %s to %s (%s on the clock, %s of runs%s).", ov.First.Format("2006-01-02 15:04:05"), ov.Last.Format("15:04:05"),
			ov.Last.Sub(ov.First).Round(time.Second), ov.RunTime.Round(time.Second), map[bool]string{true: ", simulated", false: ""}[slices.Contains(ov.Backends, "sim") && len(ov.Backends) == 1]))
	}
	out = append(out, r.trustLine())
	if ov.Checked > 0 {
		out = append(out, fmt.Sprintf("%d of %d figures show the paper's claim.", ov.Shown, ov.Checked))
	}
	if ov.Split > 0 {
		out = append(out, fmt.Sprintf("%d points' repetitions elected different leaders: each leader's runs are a row and a point of their own.", ov.Split))
	} else {
		out = append(out, "Every point's repetitions elected the same leader.")
	}
	return out
}

// trustLine says how many runs the host's verdict trusted.
func (r *Report) trustLine() string {
	h := r.Overview.Host
	if h.Measured == 0 {
		return "Host: not measured (the simulator has no host; runs from before the meter neither): every number is the system's or the model's."
	}
	s := fmt.Sprintf("Host: %d of %d measured runs trusted (every window quiet)", h.Trusted, h.Measured)
	if n := h.Runs - h.Measured; n > 0 {
		s += fmt.Sprintf(", %d runs not measured", n)
	}
	return s + "."
}
