package benchdata

import (
	"fmt"
	"image/color"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/figure"
)

// PlotHistory draws every metric of the history over the nights, one PNG (and SVG)
// per metric in dir, in the report's style: each night's samples as dots (those of
// runs the host's verdict did not trust hollow), its median as a line, and the change
// points (ChangePoints) as red lines named by the night and commit that start
// the new level. It returns the PNGs written.
func PlotHistory(nights []Night, dir string) ([]string, error) {
	plots, err := plotHistory(nights, dir)
	var files []string
	for _, p := range plots {
		files = append(files, p.PNG)
	}
	return files, err
}

// metricPlot is one metric's figure and its change points.
type metricPlot struct {
	Name     string
	PNG, SVG string
	Changes  []int // the nights that start a new level
	Ref      NightMetric
}

func plotHistory(nights []Night, dir string) ([]metricPlot, error) {
	if len(nights) == 0 {
		return nil, ErrNoBaseline
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("benchdata: plot: %w", err)
	}
	names := map[string]bool{}
	for _, n := range nights {
		for name := range n.Metrics {
			names[name] = true
		}
	}
	var out []metricPlot
	for _, name := range slices.Sorted(maps.Keys(names)) {
		base := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name))
		mp, err := plotMetric(nights, name, base)
		if err != nil {
			return out, err
		}
		out = append(out, mp)
	}
	return out, nil
}

// shortCommit is a commit's first 8 characters.
func shortCommit(c string) string {
	if len(c) > 8 {
		return c[:8]
	}
	return c
}

// nightTicks labels the nights by date (month-day), ten labels at most.
func nightTicks(nights []Night) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		step := max(1, (len(nights)+9)/10)
		var ticks []plot.Tick
		for i := 0; i < len(nights); i += step {
			ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: nights[i].Date.Format("01-02")})
		}
		return ticks
	})
}

func plotMetric(nights []Night, name, base string) (metricPlot, error) {
	mp := metricPlot{Name: name}
	series := make([][]float64, len(nights))
	var dots, hollow, medians plotter.XYs
	ymax := 0.0
	for i, n := range nights {
		m, ok := n.Metrics[name]
		if !ok {
			continue
		}
		mp.Ref = m
		series[i] = m.Samples
		x := float64(i + 1)
		for k, v := range m.Samples {
			if k < len(m.Host) && m.Host[k] != "" && m.Host[k] != analysis.Trusted {
				hollow = append(hollow, plotter.XY{X: x, Y: v})
			} else {
				dots = append(dots, plotter.XY{X: x, Y: v})
			}
			ymax = max(ymax, v)
		}
		medians = append(medians, plotter.XY{X: x, Y: m.Median})
	}
	y := mp.Ref.Unit
	if mp.Ref.Better == Lower || mp.Ref.Better == Higher {
		y += ", " + string(mp.Ref.Better) + " is better"
	}
	p := figure.New(name, fmt.Sprintf("night (%s to %s)", nights[0].Date.Format("2006-01-02"), nights[len(nights)-1].Date.Format("2006-01-02")), y)
	leg := figure.NewLegend()
	mp.Changes = ChangePoints(series, mp.Ref.MinEffect)
	var labels []figure.Span
	for k, cp := range mp.Changes {
		x := float64(cp) + 0.5 // between the last night of the old level and the first of the new
		b := figure.Bands{Spans: []figure.Span{{From: x, To: x}}, Color: color.NRGBA{}, Edge: color.NRGBA{R: 220, A: 255}}
		p.Add(b)
		labels = append(labels, figure.Span{From: x, To: x, Label: fmt.Sprintf("%s %s", nights[cp].Date.Format("01-02"), shortCommit(nights[cp].Commit))})
		if k == 0 {
			leg.Add("change point (the night starting a new level)", b)
		}
	}
	if len(dots) > 0 {
		sc, err := plotter.NewScatter(dots)
		if err != nil {
			return mp, fmt.Errorf("benchdata: plot %s: %w", name, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: color.Gray{Y: 120}, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		leg.Add("a run", sc)
	}
	if len(hollow) > 0 {
		sc, err := plotter.NewScatter(hollow)
		if err != nil {
			return mp, fmt.Errorf("benchdata: plot %s: %w", name, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: color.NRGBA{R: 230, G: 120, A: 255}, Radius: vg.Points(3.5), Shape: draw.RingGlyph{}}
		p.Add(sc)
		leg.Add("a run the host did not leave quiet", sc)
	}
	l, err := plotter.NewLine(medians)
	if err != nil {
		return mp, fmt.Errorf("benchdata: plot %s: %w", name, err)
	}
	l.Width = vg.Points(1.8)
	l.Color = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}
	p.Add(l)
	leg.Add("the night's median", l)
	p.Add(figure.SpanLabels{Spans: labels, Text: figure.TextStyle(8, color.NRGBA{R: 180, A: 255})})
	p.X.Min = 0.5
	p.X.Max = float64(len(nights)) + 0.5
	p.X.Tick.Marker = nightTicks(nights)
	p.Y.Min, p.Y.Max = 0, max(ymax*1.15, 1)
	p.Y.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	saved, err := figure.Save(p, leg, figure.Width, figure.SmallHeight, base, nil)
	if err != nil {
		return mp, fmt.Errorf("benchdata: plot %s: %w", name, err)
	}
	mp.PNG, mp.SVG = saved.PNG, saved.SVG
	return mp, nil
}
