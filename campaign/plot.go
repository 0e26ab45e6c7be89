package campaign

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/polebench/polebench/analysis"
)

// DefaultMetrics are plotted when a campaign names none.
var DefaultMetrics = []string{"latency_ms.after.all.mean", "recovery_ms", "election_ms"}

// axes are the figure's x field and series field (either may be "").
func (c *Campaign) axes() (x, series string) {
	x, series = c.Plot.X, c.Plot.Series
	for _, a := range c.Vary {
		switch {
		case x == "" && a.Field != series:
			x = a.Field
		case series == "" && a.Field != x:
			series = a.Field
		}
	}
	return x, series
}

// Figure is one drawn metric.
type Figure struct {
	Metric   string
	PNG, SVG string // file names in the campaign directory
}

// Draw draws each of the campaign's metrics against its x field, one series per
// value of its series field: the mean of the repetitions with 95 % interval bars, the
// analytic model dashed where the metric has one (a latency mean beside its
// model_ms), and the paper's value as a large cross where the paper gives one. It
// reads results.csv alone, so figures can be redrawn without rerunning.
func Draw(dir string, c *Campaign) ([]Figure, error) {
	rows, err := ReadResults(dir, c)
	if err != nil {
		return nil, err
	}
	metrics := c.Plot.Metrics
	if len(metrics) == 0 {
		metrics = DefaultMetrics
	}
	xField, sField := c.axes()
	var figs []Figure
	for _, m := range metrics {
		p, err := c.plotMetric(rows, m, xField, sField)
		if err != nil {
			return figs, err
		}
		if p == nil {
			continue // no run measured it (say, recovery without a crash)
		}
		base := c.Name + "-" + strings.NewReplacer(".", "_", "/", "_").Replace(m)
		f := Figure{Metric: m, PNG: base + ".png", SVG: base + ".svg"}
		for _, name := range []string{f.PNG, f.SVG} {
			if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
				return figs, fmt.Errorf("campaign: plot %s: %w", name, err)
			}
		}
		figs = append(figs, f)
	}
	return figs, nil
}

// xPos places the x values: numbers where they all are numbers, else 1, 2, 3...
func (c *Campaign) xPos(xField string) (map[string]float64, []plot.Tick, bool) {
	var values []string
	for _, a := range c.Vary {
		if a.Field == xField {
			values = a.Values
		}
	}
	pos := map[string]float64{}
	numeric := len(values) > 0
	for _, v := range values {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			numeric = false
			break
		}
		pos[v] = f
	}
	var ticks []plot.Tick
	if !numeric {
		for i, v := range values {
			pos[v] = float64(i + 1)
			ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: v})
		}
	}
	return pos, ticks, numeric
}

func (c *Campaign) plotMetric(rows []Row, metric, xField, sField string) (*plot.Plot, error) {
	pos, ticks, _ := c.xPos(xField)
	var seriesValues []string
	for _, a := range c.Vary {
		if a.Field == sField {
			seriesValues = a.Values
		}
	}
	if sField == "" {
		seriesValues = []string{""}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s", c.Name, metric)
	if c.Title != "" {
		p.Title.Text = c.Title + ": " + metric
	}
	p.X.Label.Text = xField
	p.Y.Label.Text = metric
	if ticks != nil {
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = 0.5, float64(len(ticks))+0.5
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	any := false
	top := 0.0 // the highest point drawn, interval bars included
	modelMetric := ""
	if strings.HasSuffix(metric, ".mean") {
		modelMetric = strings.TrimSuffix(metric, ".mean") + ".model_ms"
	}
	for si, sv := range seriesValues {
		// Per x value, this series' samples (and model values).
		samples := map[float64][]float64{}
		models := map[float64][]float64{}
		for _, r := range rows {
			if sField != "" && r.Point.Value(sField) != sv {
				continue
			}
			x, ok := pos[r.Point.Value(xField)]
			if xField == "" {
				x, ok = 1, true
			}
			if !ok {
				continue
			}
			if v, ok := r.Metrics[metric]; ok {
				samples[x] = append(samples[x], v)
			}
			if v, ok := r.Metrics[modelMetric]; ok && modelMetric != "" {
				models[x] = append(models[x], v)
			}
		}
		if len(samples) == 0 {
			continue
		}
		any = true
		xs := make([]float64, 0, len(samples))
		for x := range samples {
			xs = append(xs, x)
		}
		slices.Sort(xs)
		pts := make(plotter.XYs, len(xs))
		errs := make(plotter.YErrors, len(xs))
		for i, x := range xs {
			a, err := analysis.Aggregate(samples[x])
			if err != nil {
				return nil, err
			}
			// A little offset per series keeps overlapping interval bars apart.
			pts[i] = plotter.XY{X: x + offset(si, len(seriesValues), xs), Y: a.Mean}
			top = max(top, a.Max)
			if a.CI95 != nil {
				errs[i].Low, errs[i].High = a.CI95.HalfWidth, a.CI95.HalfWidth
				top = max(top, a.CI95.High)
			}
		}
		col := plotutil.Color(si)
		label := sv
		if label == "" {
			label = "measured"
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		line.Color = col
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.Color = col
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{pts, errs})
		if err != nil {
			return nil, err
		}
		bars.Color = col
		p.Add(line, sc, bars)
		p.Legend.Add(label+" (mean, 95 % CI)", line, sc)
		if len(models) > 0 {
			var mp plotter.XYs
			for _, x := range xs {
				if vs := models[x]; len(vs) > 0 {
					a, _ := analysis.Aggregate(vs)
					mp = append(mp, plotter.XY{X: x, Y: a.Mean})
					top = max(top, a.Mean)
				}
			}
			ml, err := plotter.NewLine(mp)
			if err != nil {
				return nil, err
			}
			ml.Color = col
			ml.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(ml)
			p.Legend.Add(label+" model", ml)
		}
		var paper plotter.XYs
		for _, xv := range slices.Sorted(maps.Keys(pos)) { // in order: the SVG is the same every run
			if v, _, ok := PaperValue(c.Name, metric, map[string]string{sField: sv, xField: xv}); ok {
				paper = append(paper, plotter.XY{X: pos[xv], Y: v})
				top = max(top, v)
			}
		}
		if len(paper) > 0 {
			ps, err := plotter.NewScatter(paper)
			if err != nil {
				return nil, err
			}
			ps.Color = col
			ps.GlyphStyle.Shape = draw.CrossGlyph{}
			ps.GlyphStyle.Radius = vg.Points(6)
			p.Add(ps)
			p.Legend.Add(label+" paper", ps)
		}
	}
	if !any {
		return nil, nil
	}
	p.Y.Min = 0
	// Room above the data for the legend: up to three lines per series.
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Y.Max = top * (1 + 0.045*3*float64(len(seriesValues)))
	return p, nil
}

// offset spreads the series of one x a little apart (1.5 % of the x range each).
func offset(i, n int, xs []float64) float64 {
	if n <= 1 || len(xs) < 2 {
		return 0
	}
	span := xs[len(xs)-1] - xs[0]
	return (float64(i) - float64(n-1)/2) * 0.015 * span
}
