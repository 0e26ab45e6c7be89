package benchdata

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/figure"
)

// HistoryPage is what WriteHistoryPage wrote: history.html and the figures beside it.
type HistoryPage struct {
	HTML    string
	Figures []string // PNGs (an SVG beside each)
}

// Change is one change point of a metric: the night that starts the new level, and
// the medians of the levels before and after it.
type Change struct {
	Night         int // index into the nights
	Before, After float64
}

// changes gives each change point the medians of its neighbouring levels.
func changes(nights []Night, name string, cps []int) []Change {
	bounds := append(append([]int{0}, cps...), len(nights))
	level := func(lo, hi int) float64 {
		var all [][]float64
		for _, n := range nights[lo:hi] {
			all = append(all, n.Metrics[name].Samples)
		}
		s := pool(all)
		if len(s) == 0 {
			return math.NaN()
		}
		return Median(s)
	}
	var out []Change
	for i, cp := range cps {
		out = append(out, Change{Night: cp, Before: level(bounds[i], cp), After: level(cp, bounds[i+2])})
	}
	return out
}

var historyTmpl = template.Must(template.New("history").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>polebench: the nights</title>
<style>
{{.CSS}}
</style></head>
<body>
<h1>polebench: the nights</h1>
<p class="meta">{{.Nights}} nights from {{.From}} to {{.To}} · last commit {{.Commit}}</p>
<h2 id="overview">Overview</h2>
<div class="cards">
<div class="card"><span class="big">{{.Nights}} nights</span><span class="small">{{.From}} to {{.To}}</span></div>
<div class="card"><span class="big">{{len .Metrics}} metrics</span><span class="small">each night's runs, medians and change points below</span></div>
<div class="card"><span class="big">{{.Changed}} changed</span><span class="small">metrics whose level shifted (Mann-Whitney binary segmentation, beyond the metric's minimum effect)</span></div>
<div class="card"><span class="big">{{.Trusted}}</span><span class="small">{{.TrustNote}}</span></div>
</div>
<table id="metrics"><thead><tr><th>metric</th><th>unit</th><th>first night's median</th><th>last night's median</th><th>change points</th></tr></thead><tbody>
{{range .Metrics}}<tr class="metric"><td><a href="#{{.Anchor}}">{{.Name}}</a></td><td>{{.Unit}}</td><td class="num">{{.First}}</td><td class="num">{{.Last}}</td><td{{if .Changes}} class="bad"{{end}}>{{if .Changes}}{{range .Changes}}{{.}}<br>{{end}}{{else}}<span class="muted">none</span>{{end}}</td></tr>
{{end}}</tbody></table>
{{range .Metrics}}<section class="metric" id="{{.Anchor}}">
<h3>{{.Name}}</h3>
<figure data-kind="history"><div class="plot"><img src="{{.Src}}" alt="{{.Name}} over the nights" data-title="{{.Name}}" data-y-label="{{.Unit}}"></div>
<figcaption>Grey dots: each night's runs; hollow orange: runs the host's verdict did not trust; blue: the night's median; red line: a change point, named by the date and commit of the night that starts the new level. {{if .Changes}}Changes: {{range .Changes}}{{.}}; {{end}}{{end}}<a href="{{.SVG}}">SVG</a></figcaption></figure>
</section>
{{end}}
<script>
{{.JS}}
window.addEventListener("load", markImages);
</script>
</body></html>
`))

// WriteHistoryPage draws every metric over the nights into dir (PlotHistory) and
// writes dir/history.html, self-contained in the report's style: an overview (nights,
// metrics, how many changed level, how many runs the host's verdict trusted), a table
// of the metrics with their first and last medians and change points (date, commit,
// the level before and after), and each metric's figure.
func WriteHistoryPage(nights []Night, dir string) (*HistoryPage, error) {
	plots, err := plotHistory(nights, dir)
	if err != nil {
		return nil, err
	}
	out := &HistoryPage{HTML: filepath.Join(dir, "history.html")}
	type metric struct {
		Name, Anchor, Unit, First, Last, SVG string
		Src                                  template.URL
		Changes                              []string
	}
	var ms []metric
	changed := 0
	var host analysis.HostRuns
	for _, mp := range plots {
		out.Figures = append(out.Figures, mp.PNG)
		b, err := os.ReadFile(mp.PNG)
		if err != nil {
			return nil, fmt.Errorf("benchdata: history page: %w", err)
		}
		m := metric{Name: mp.Name, Anchor: "m-" + strings.NewReplacer("/", "-", ".", "-", " ", "-").Replace(mp.Name), Unit: mp.Ref.Unit,
			SVG: filepath.Base(mp.SVG), Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))}
		if mp.Ref.Better == Lower || mp.Ref.Better == Higher {
			m.Unit += " (" + string(mp.Ref.Better) + " is better)"
		}
		first, last := "-", "-"
		for _, n := range nights {
			if nm, ok := n.Metrics[mp.Name]; ok {
				if first == "-" {
					first = fmt.Sprintf("%.4g", nm.Median)
				}
				last = fmt.Sprintf("%.4g", nm.Median)
			}
		}
		m.First, m.Last = first, last
		for _, c := range changes(nights, mp.Name, mp.Changes) {
			n := nights[c.Night]
			m.Changes = append(m.Changes, fmt.Sprintf("night %d (%s, %s): %.4g → %.4g %s (%+.1f %%)", c.Night+1, n.Date.Format("2006-01-02"),
				orNone(shortCommit(n.Commit)), c.Before, c.After, mp.Ref.Unit, 100*(c.After-c.Before)/math.Abs(c.Before)))
		}
		if len(m.Changes) > 0 {
			changed++
		}
		ms = append(ms, m)
	}
	for _, n := range nights {
		for _, nm := range n.Metrics {
			for _, v := range nm.Host {
				host.Add(v == analysis.Trusted, v != "")
			}
		}
	}
	data := map[string]any{"CSS": template.CSS(figure.PageCSS), "JS": template.JS(figure.MarkImagesJS), "Nights": len(nights), "Metrics": ms, "Changed": changed,
		"From": nights[0].Date.Format("2006-01-02"), "To": nights[len(nights)-1].Date.Format("2006-01-02"),
		"Commit": orNone(shortCommit(nights[len(nights)-1].Commit))}
	if host.Measured == 0 {
		data["Trusted"], data["TrustNote"] = "host not measured", "no night's runs measured their host"
	} else {
		data["Trusted"] = fmt.Sprintf("%d of %d trusted", host.Trusted, host.Measured)
		data["TrustNote"] = "samples whose run the host's verdict trusted, over every metric and night"
	}
	f, err := os.Create(out.HTML)
	if err != nil {
		return nil, fmt.Errorf("benchdata: history page: %w", err)
	}
	if err := historyTmpl.Execute(f, data); err != nil {
		f.Close()
		return nil, fmt.Errorf("benchdata: history page: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("benchdata: history page: %w", err)
	}
	return out, nil
}

func orNone(s string) string {
	if s == "" {
		return "no commit"
	}
	return s
}
