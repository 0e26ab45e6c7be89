package campaign

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
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

// PaperRow is one number of the paper beside the model and the measurement.
type PaperRow struct {
	Campaign, What, Metric string
	Paper                  float64
	Model                  *float64
	Measured               *analysis.Agg
	SameWinner             *bool
	Winner, ModelWinner    int
	Tied                   []int // servers the model scores equal with its winner
	// Host counts the point's runs by the host's verdict (nil: no point measured it).
	Host *analysis.HostRuns
}

// Diff is measured minus model.
func (r PaperRow) Diff() *float64 {
	if r.Model == nil || r.Measured == nil {
		return nil
	}
	d := r.Measured.Mean - *r.Model
	return &d
}

// Section is one campaign in a report: its figures and whether they show the claim.
type Section struct {
	Campaign *Campaign
	Dir      string
	Figures  []Figure
	Verdict  string // what the measurement says about the claim
	Runs     int
	Links    string
	Backend  string
	Host     string // HostLine: how many runs the host's verdict trusted
}

// Report is what report.md and report.html show.
type Report struct {
	Title    string
	Version  string
	Machine  string
	When     string
	Rows     []PaperRow
	Sections []Section
}

// BuildReport reads the campaign directories (each with campaign.yaml and
// results.csv), draws their figures and sets the paper's numbers beside the model
// and the measurement.
func BuildReport(dirs []string, version string) (*Report, error) {
	r := &Report{Title: "polebench: the POLE paper's evaluation, reproduced", Version: version,
		Machine: machine(), When: time.Now().Format("2006-01-02 15:04 MST")}
	for _, dir := range dirs {
		c, err := LoadDir(dir)
		if err != nil {
			return nil, err
		}
		rows, err := ReadResults(dir, c)
		if err != nil {
			return nil, err
		}
		figs, err := Draw(dir, c)
		if err != nil {
			return nil, err
		}
		sec := Section{Campaign: c, Dir: dir, Figures: figs, Runs: len(rows), Verdict: c.verdict(rows), Host: HostLine(c, rows)}
		sec.Backend, sec.Links = runEnvironment(dir, c)
		r.Sections = append(r.Sections, sec)
		pr, err := c.paperRows(rows)
		if err != nil {
			return nil, err
		}
		r.Rows = append(r.Rows, pr...)
	}
	return r, nil
}

// paperRows finds, for each of the paper's numbers this campaign measures, the point
// it belongs to.
func (c *Campaign) paperRows(rows []Row) ([]PaperRow, error) {
	var out []PaperRow
	for _, n := range paperNumbers {
		if n.Campaign != c.Name {
			continue
		}
		row := PaperRow{Campaign: c.Name, What: n.What, Metric: n.Metric, Paper: n.Value}
		for _, p := range c.Points() {
			ok := true
			for f, v := range n.At {
				ok = ok && p.Value(f) == v
			}
			if !ok {
				continue
			}
			var vals, models, leaders []float64
			for _, r := range rows {
				if r.Point.Index != p.Index {
					continue
				}
				if v, ok := r.Metrics[n.Metric]; ok {
					vals = append(vals, v)
				}
				if v, ok := r.Metrics[strings.TrimSuffix(n.Metric, ".mean")+".model_ms"]; ok {
					models = append(models, v)
				}
				leaders = append(leaders, r.Metrics["new_leader"])
			}
			if h := PointHost(rows, p); h.Runs > 0 {
				row.Host = &h
			}
			if len(vals) > 0 {
				a, err := analysis.Aggregate(vals)
				if err != nil {
					return nil, err
				}
				row.Measured = &a
			}
			if len(models) > 0 {
				m := models[0]
				row.Model = &m
			}
			if sp, err := c.SpecFor(p, 1); err == nil && len(leaders) > 0 && strings.Contains(n.Metric, ".after.") {
				if pred, err := sp.Model(); err == nil {
					var tied []int // the model's winner and any server it ties with
					for _, e := range pred.Elections {
						if e.Oracle == sp.Oracle.Name {
							row.ModelWinner, tied = e.Leader, append([]int{e.Leader}, e.Tied...)
						}
					}
					row.Winner = int(leaders[0])
					same := row.ModelWinner != 0
					for _, l := range leaders {
						same = same && slices.Contains(tied, int(l))
					}
					row.SameWinner = &same
					if len(tied) > 1 {
						row.Tied = tied
					}
				}
			}
			break
		}
		out = append(out, row)
	}
	return out, nil
}

// verdict says whether the runs show what the campaign expects.
func (c *Campaign) verdict(rows []Row) string {
	e := c.Expect
	if e == nil {
		return ""
	}
	xField, sField := c.axes()
	if sField == "" { // one varied field: Higher and Lower are two of its values
		xField, sField = "", xField
	}
	means := map[string]map[string][]float64{} // x value -> series -> samples
	for _, r := range rows {
		v, ok := r.Metrics[e.Metric]
		if !ok {
			continue
		}
		x := r.Point.Value(xField)
		if means[x] == nil {
			means[x] = map[string][]float64{}
		}
		s := r.Point.Value(sField)
		means[x][s] = append(means[x][s], v)
	}
	shown, compared := 0, 0
	var notes []string
	for _, x := range slices.Sorted(mapsKeys(means)) {
		if len(e.At) > 0 && !slices.Contains(e.At, x) {
			continue
		}
		hi, lo := means[x][e.Higher], means[x][e.Lower]
		if len(hi) == 0 || len(lo) == 0 {
			continue
		}
		compared++
		h, l := mean(hi), mean(lo)
		if h > l {
			shown++
		}
		at := ""
		if xField != "" {
			at = xField + "=" + x + ": "
		}
		notes = append(notes, fmt.Sprintf("%s%s %.1f vs %s %.1f", at, e.Higher, h, e.Lower, l))
	}
	switch {
	case compared == 0:
		return "not measured"
	case shown == compared:
		return fmt.Sprintf("shown: %s is above %s at every point (%s)", e.Higher, e.Lower, strings.Join(notes, "; "))
	}
	return fmt.Sprintf("NOT shown at %d of %d points (%s)", compared-shown, compared, strings.Join(notes, "; "))
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
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

func fmtWinner(r PaperRow) string {
	if r.SameWinner == nil {
		return "-"
	}
	if *r.SameWinner {
		if r.Winner != r.ModelWinner {
			return fmt.Sprintf("yes (p%d, which the model ties with p%d)", r.Winner, r.ModelWinner)
		}
		return fmt.Sprintf("yes (p%d)", r.Winner)
	}
	return fmt.Sprintf("no: p%d, model p%d", r.Winner, r.ModelWinner)
}

// WriteMarkdown writes report.md into dir (figures are referenced beside it).
func (r *Report) WriteMarkdown(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\npolebench %s, %s, %s.\n\n", r.Title, r.Version, r.Machine, r.When)
	b.WriteString("| setting | paper | model | measured (mean, 95 % CI) | measured - model | same winner | host |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %.1f | %s | %s | %s | %s | %s |\n", row.What, row.Paper, fmtPtr(row.Model), fmtAgg(row.Measured), fmtPtr(row.Diff()), fmtWinner(row), fmtHost(row.Host))
	}
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "\n## %s\n\n", s.title())
		fmt.Fprintf(&b, "%d runs on the %s backend, links: %s.\n\n", s.Runs, s.Backend, s.Links)
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
			rel, _ := filepath.Rel(dir, filepath.Join(s.Dir, f.PNG))
			fmt.Fprintf(&b, "![%s](%s)\n\n", f.Metric, filepath.ToSlash(rel))
		}
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

func (s Section) title() string {
	if s.Campaign.Title != "" {
		return s.Campaign.Title
	}
	return s.Campaign.Name
}

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"ptr": fmtPtr, "agg": fmtAgg, "winner": fmtWinner, "host": fmtHost,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.R.Title}}</title>
<style>
body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#eee}.bad{color:#b00}.good{color:#070}figure{margin:1em 0}img{max-width:100%}
.caption{font-size:.95em;color:#333}
</style></head><body>
<h1>{{.R.Title}}</h1>
<p>polebench {{.R.Version}}, {{.R.Machine}}, {{.R.When}}.</p>
<h2>The paper's numbers</h2>
<table id="numbers"><tr><th>setting</th><th>paper</th><th>model</th><th>measured (mean, 95 % CI)</th><th>measured − model</th><th>same winner</th><th>host</th></tr>
{{if not .R.Rows}}<tr><td colspan="7">none of the paper's numbers is measured by these campaigns</td></tr>{{end}}
{{range .R.Rows}}<tr class="number"><td>{{.What}}</td><td>{{printf "%.1f" .Paper}}</td><td>{{ptr .Model}}</td><td>{{agg .Measured}}</td><td>{{ptr .Diff}}</td><td>{{winner .}}</td><td>{{host .Host}}</td></tr>
{{end}}</table>
{{range .Sections}}<h2>{{.Title}}</h2>
<p>{{.Runs}} runs on the {{.Backend}} backend; links: {{.Links}}.</p>
{{if .Host}}<p class="caption">{{.Host}}.</p>{{end}}
{{if .Claim}}<p class="caption">The paper: {{.Claim}}</p>{{end}}
{{if .Verdict}}<p class="caption">This run: {{.Verdict}}</p>{{end}}
{{range .Figures}}<figure><img alt="{{.Metric}}" src="{{.Src}}"><figcaption>{{.Metric}}</figcaption></figure>
{{end}}{{end}}
<script>
// Marks what a reader would see: how many figures loaded.
window.addEventListener("load", function () {
  var ok = 0, broken = 0;
  document.querySelectorAll("img").forEach(function (i) { if (i.complete && i.naturalWidth > 0) ok++; else broken++; });
  document.body.setAttribute("data-images-ok", ok);
  document.body.setAttribute("data-images-broken", broken);
});
</script>
</body></html>
`))

// WriteHTML writes report.html into dir, self-contained: the figures are inlined.
func (r *Report) WriteHTML(dir string) error {
	type fig struct {
		Metric string
		Src    template.URL
	}
	type sec struct {
		Title, Claim, Verdict, Backend, Links, Host string
		Runs                                        int
		Figures                                     []fig
	}
	var secs []sec
	for _, s := range r.Sections {
		x := sec{Title: s.title(), Claim: s.Campaign.Claim, Verdict: s.Verdict, Backend: s.Backend, Links: s.Links, Host: s.Host, Runs: s.Runs}
		for _, f := range s.Figures {
			b, err := os.ReadFile(filepath.Join(s.Dir, f.PNG))
			if err != nil {
				return err
			}
			x.Figures = append(x.Figures, fig{Metric: f.Metric, Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))})
		}
		secs = append(secs, x)
	}
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	if err := htmlTmpl.Execute(f, map[string]any{"R": r, "Sections": secs}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
