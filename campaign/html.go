package campaign

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"

	"github.com/polebench/polebench/figure"
)

// report.html is one self-contained file (every image inline as a data: URI): an
// overview, the paper's numbers beside the model and the measurement with a tie-aware
// winner column, and a section per figure with its evidence (one run over time with
// its faults, its percentiles), each point of a figure linked to its run directory.

var htmlTmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{.CSS}}
</style></head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">polebench {{.Version}} · {{.Machine}} · written {{.When}}</p>

<h2 id="overview">Overview</h2>
<div class="cards">
<div class="card"><span class="big" id="runs">{{.Ov.Runs}} runs</span><span class="small">in {{.Ov.Figures}} figures · {{.Backends}} backend · links: {{.Links}}</span></div>
<div class="card"><span class="big">{{.Clock}}</span><span class="small">{{.When2}}</span></div>
<div class="card"><span class="big" id="trusted">{{.Trusted}}</span><span class="small">{{.TrustNote}}</span></div>
<div class="card"><span class="big">{{.Claims}}</span><span class="small">figures whose runs show the paper's claim</span></div>
<div class="card"><span class="big">{{.Splits}}</span><span class="small">{{.SplitNote}}</span></div>
</div>
<nav><ol>{{range .Sections}}<li><a href="#{{.Anchor}}">{{.Title}}</a> {{if .Mark}}<span class="{{.MarkClass}}">{{.Mark}}</span>{{end}}</li>{{end}}</ol></nav>

<h2 id="numbers-title">The paper's numbers</h2>
<p class="muted">Each number the paper gives, beside the analytic model and this measurement (mean of the runs, Student-t 95 % interval). Runs that elected different leaders are never averaged: each leader's runs are a row of their own, with their count. The winner column says whether the runs elected the model's leader; where the model's scores of several servers lie within the links' jitter of each other, it reads "tie", since the measured jitter decides.</p>
<table id="numbers"><thead><tr><th>setting</th><th>paper</th><th>model</th><th>measured (mean, 95 % CI)</th><th>measured − model</th><th>winner</th><th>host</th><th>runs</th></tr></thead><tbody>
{{if not .Rows}}<tr><td colspan="8">none of the paper's numbers is measured by these campaigns</td></tr>{{end}}
{{range .Rows}}<tr class="number{{if .Split}} split{{end}}"><td>{{.Setting}}</td><td class="num">{{.Paper}}</td><td class="num">{{.Model}}</td><td class="num">{{.Measured}}</td><td class="num">{{.Diff}}</td><td class="{{.WinnerClass}}">{{.Winner}}</td><td>{{.Host}}</td><td>{{range .Runs}}<a href="{{.Href}}">{{.Text}}</a> {{end}}</td></tr>
{{end}}</tbody></table>

{{range .Policies}}<h2 class="policies-title">{{.Title}}</h2>
<p class="muted">The mean latency under the leader each run ended with (after placement where the controller moved it, else after the crash), beside the model for that leader, with the leader; poled's as in the paper's numbers above.</p>
<table class="policies" data-campaign="{{.Campaign}}"><thead><tr><th>setting</th><th>paper</th><th>poled</th>{{range .Names}}<th>etcd, {{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr><td>{{.Setting}}</td><td class="num">{{.Paper}}</td><td class="num">{{.Poled}}</td>{{range .Cells}}<td class="num">{{.Text}} {{range .Runs}}<a href="{{.Href}}">{{.Text}}</a> {{end}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{end}}
{{range .Sections}}<section class="campaign" id="{{.Anchor}}" data-campaign="{{.Name}}">
<h2>{{.Title}}</h2>
<p class="muted">{{.Runs}} runs on the {{.Backend}} backend; links: {{.Links}}.{{if .Host}} {{.Host}}.{{end}} Spec {{.Spec}}{{if .Settings}} with {{.Settings}}{{end}}; {{.Reps}} per point. Campaign directory: <a href="{{.DirHref}}">{{.DirText}}</a>.</p>
{{if .Claim}}<p class="claim"><b>The paper:</b> {{.Claim}}</p>{{end}}
{{if .Verdict}}<p class="verdict {{.VerdictClass}}"><b>This run:</b> {{.Verdict}}</p>{{end}}
{{range .Results}}<figure class="result" data-kind="{{.Kind}}">
<div class="plot"><img src="{{.Src}}" alt="{{.Title}}: {{.YLabel}} against {{.XLabel}}" data-title="{{.Title}}" data-x-label="{{.XLabel}}" data-y-label="{{.YLabel}}">{{range .Spots}}<a class="spot" style="{{.Style}}" href="{{.Href}}" title="{{.Title}}"></a>{{end}}</div>
<figcaption><b>{{.Title}}.</b> {{.Caption}} <a href="{{.SVG}}">SVG</a></figcaption></figure>
{{end}}
{{if .EvidenceNote}}<p class="verdict bad">{{.EvidenceNote}}</p>{{end}}
{{if .Evidence}}<h3>The evidence: one run behind the figure</h3>
<div class="evidence">{{range .Evidence}}<figure class="evidence-fig" data-kind="{{.Kind}}">
<div class="plot"><img src="{{.Src}}" alt="{{.Title}}: {{.YLabel}} against {{.XLabel}}" data-title="{{.Title}}" data-x-label="{{.XLabel}}" data-y-label="{{.YLabel}}"></div>
<figcaption><b>{{.Title}}.</b> {{.Caption}} Run directory: <a href="{{.RunHref}}">{{.RunText}}</a>.</figcaption></figure>
{{end}}</div>{{end}}
{{if .Points}}<details><summary>The figures' data: {{len .Points}} rows, one per point and leader elected, each with its run directories</summary>
<table class="points"><thead><tr><th>point</th><th>elected</th>{{range .Metrics}}<th>{{.}}</th><th>model</th>{{end}}<th>runs</th></tr></thead><tbody>
{{range .Points}}<tr{{if .Split}} class="split"{{end}}><td>{{.Point}}</td><td>{{.Who}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}<td>{{range .Runs}}<a href="{{.Href}}">{{.Text}}</a> {{end}}</td></tr>
{{end}}</tbody></table></details>{{end}}
</section>
{{end}}
<script>
// What a reader would see: every image loaded, and each figure section's evidence.
{{.JS}}
window.addEventListener("load", function () {
  markImages();
  document.querySelectorAll("section.campaign").forEach(function (s) {
    var kinds = [];
    s.querySelectorAll("figure").forEach(function (f) {
      var img = f.querySelector("img");
      if (img && img.getAttribute("data-loaded") === "1") kinds.push(f.getAttribute("data-kind"));
    });
    s.setAttribute("data-loaded-kinds", kinds.join(","));
  });
});
</script>
</body></html>
`))

type htmlLink struct{ Href, Text string }

type htmlSpot struct {
	Style template.CSS
	Href  string
	Title string
}

type htmlFig struct {
	Kind, Title, XLabel, YLabel, Caption, SVG string
	Src                                       template.URL
	Spots                                     []htmlSpot
	RunHref, RunText                          string
}

type htmlRow struct {
	Setting, Paper, Model, Measured, Diff, Winner, WinnerClass, Host string
	Split                                                            bool
	Runs                                                             []htmlLink
}

type htmlPoint struct {
	Point, Who string
	Split      bool
	Cells      []string
	Runs       []htmlLink
}

type htmlSection struct {
	Name, Anchor, Title, Claim, Verdict, VerdictClass, Mark, MarkClass string
	Backend, Links, Host, DirHref, DirText, EvidenceNote               string
	Spec, Settings, Reps                                               string
	Runs                                                               int
	Results, Evidence                                                  []htmlFig
	Metrics                                                            []string
	Points                                                             []htmlPoint
}

// WriteHTML writes report.html into dir, self-contained: the figures are inlined.
func (r *Report) WriteHTML(dir string) error {
	rel := func(p string) string {
		x, err := filepath.Rel(dir, p)
		if err != nil {
			x = p
		}
		return filepath.ToSlash(x)
	}
	ov := r.Overview
	data := map[string]any{
		"CSS":   template.CSS(figure.PageCSS),
		"JS":    template.JS(figure.MarkImagesJS),
		"Title": r.Title, "Version": r.Version, "Machine": r.Machine, "When": r.When, "Ov": ov,
		"Backends": orDash(strings.Join(ov.Backends, ", ")), "Links": orDash(strings.Join(ov.Links, ", ")),
	}
	data["Clock"], data["When2"] = "-", "no run finished"
	if !ov.First.IsZero() {
		data["Clock"] = ov.Last.Sub(ov.First).Round(1e9).String()
		kind := "of runs"
		if len(ov.Backends) == 1 && ov.Backends[0] == "sim" {
			kind = "simulated"
		}
		data["When2"] = fmt.Sprintf("on the clock, %s to %s; %s %s", ov.First.Format("2006-01-02 15:04:05"), ov.Last.Format("15:04:05"), ov.RunTime.Round(1e9), kind)
	}
	if ov.Host.Measured == 0 {
		data["Trusted"], data["TrustNote"] = "host not measured", "the simulator has no host, and runs from before the hiccup meter none measured: nothing to distrust"
	} else {
		data["Trusted"] = fmt.Sprintf("%d of %d trusted", ov.Host.Trusted, ov.Host.Measured)
		data["TrustNote"] = "runs whose every window the host's verdict trusted (summary.json's host)"
		if n := ov.Host.Runs - ov.Host.Measured; n > 0 {
			data["TrustNote"] = fmt.Sprintf("%s; %d runs did not measure their host", data["TrustNote"], n)
		}
	}
	data["Claims"] = "-"
	if ov.Checked > 0 {
		data["Claims"] = fmt.Sprintf("%d of %d", ov.Shown, ov.Checked)
	}
	data["Splits"] = fmt.Sprintf("%d split points", ov.Split)
	data["SplitNote"] = "points whose repetitions elected different leaders; each leader's runs are drawn and tabled on their own, never averaged"
	if ov.Split == 0 {
		data["Splits"] = "no split point"
		data["SplitNote"] = "every point's repetitions elected the same leader"
	}

	var rows []htmlRow
	for _, row := range r.Rows {
		hr := htmlRow{Setting: row.Setting(), Paper: fmtPaper(row), Model: fmtPtr(row.Model), Measured: fmtAgg(row.Measured),
			Diff: fmtPtr(row.Diff()), Winner: fmtWinner(row), Host: fmtHost(row.Host), Split: row.Group != nil && row.Group.Split()}
		switch {
		case strings.HasPrefix(row.Winner, "tie:"):
			hr.WinnerClass = "tie"
		case row.SameWinner != nil && *row.SameWinner:
			hr.WinnerClass = "good"
		case row.SameWinner != nil:
			hr.WinnerClass = "bad"
		}
		for i, l := range row.Runs {
			text := fmt.Sprintf("run %d", i+1)
			if row.Group != nil {
				text = fmt.Sprintf("rep%d", row.Group.Rows[i].Rep)
			}
			hr.Runs = append(hr.Runs, htmlLink{Href: rel(filepath.Join(r.sectionDir(row.Campaign), l)), Text: text})
		}
		rows = append(rows, hr)
	}
	data["Rows"] = rows
	data["Policies"] = r.htmlPolicies(rel)

	var secs []htmlSection
	for _, s := range r.Sections {
		hs := htmlSection{Name: s.Campaign.Name, Anchor: s.anchor(), Title: s.title(), Claim: s.Campaign.Claim, Verdict: s.Verdict,
			Backend: orDash(s.Backend), Links: orDash(s.Links), Host: s.Host, Runs: s.Runs, DirHref: rel(s.Dir), DirText: rel(s.Dir), EvidenceNote: s.Evidence,
			Spec: s.Campaign.Spec, Settings: strings.Join(s.Campaign.Settings, " "), Reps: plural(s.Campaign.Repetitions, "repetition")}
		if s.Shown != nil {
			hs.VerdictClass, hs.Mark, hs.MarkClass = "bad", "✗ not shown", "bad"
			if *s.Shown {
				hs.VerdictClass, hs.Mark, hs.MarkClass = "good", "✓ shown", "good"
			}
		}
		for _, f := range s.Figures {
			b, err := os.ReadFile(filepath.Join(s.Dir, f.PNG))
			if err != nil {
				return err
			}
			hf := htmlFig{Kind: f.Kind, Title: f.Title, XLabel: f.XLabel, YLabel: f.YLabel, Caption: f.Caption, SVG: rel(filepath.Join(s.Dir, f.SVG)),
				Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))}
			for _, sp := range f.Spots {
				hf.Spots = append(hf.Spots, htmlSpot{Style: template.CSS(fmt.Sprintf("left:%.2f%%;top:%.2f%%", 100*sp.X, 100*sp.Y)),
					Href: rel(filepath.Join(s.Dir, sp.Link)), Title: sp.Title})
			}
			if f.Run != "" {
				hf.RunHref, hf.RunText = rel(filepath.Join(s.Dir, f.Run)), rel(filepath.Join(s.Dir, f.Run))
				hs.Evidence = append(hs.Evidence, hf)
			} else {
				hs.Results = append(hs.Results, hf)
			}
		}
		for _, m := range s.Metrics() {
			hs.Metrics = append(hs.Metrics, MetricLabel(m))
		}
		for _, pr := range s.Points {
			hp := htmlPoint{Point: pointWords(pr.Point), Who: whoOrDash(pr.Group), Split: pr.Group.Split()}
			for i := range pr.Values {
				hp.Cells = append(hp.Cells, pr.Values[i], orDash(pr.Model[i]))
			}
			for i, l := range pr.Runs {
				hp.Runs = append(hp.Runs, htmlLink{Href: rel(filepath.Join(s.Dir, l)), Text: fmt.Sprintf("rep%d", pr.Group.Rows[i].Rep)})
			}
			hs.Points = append(hs.Points, hp)
		}
		secs = append(secs, hs)
	}
	data["Sections"] = secs
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	if err := htmlTmpl.Execute(f, data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
