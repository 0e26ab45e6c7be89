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
)

// PlotHistory draws every metric of the history over the nights, one PNG per metric
// in dir: each night's samples as dots, its median as a line, and the change points
// (ChangePoints) as red vertical lines. It returns the files written.
func PlotHistory(nights []Night, dir string) ([]string, error) {
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
	var files []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name)+".png")
		if err := plotMetric(nights, name, path); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

func plotMetric(nights []Night, name, path string) error {
	p := plot.New()
	p.Title.Text = name
	p.X.Label.Text = fmt.Sprintf("night (1 = %s, %d = %s)", nights[0].Date.Format("2006-01-02"), len(nights), nights[len(nights)-1].Date.Format("2006-01-02"))
	p.Add(plotter.NewGrid())
	var dots, medians plotter.XYs
	series := make([][]float64, len(nights))
	var ref NightMetric
	ymin, ymax := 0.0, 0.0
	for i, n := range nights {
		m, ok := n.Metrics[name]
		if !ok {
			continue
		}
		ref = m
		series[i] = m.Samples
		x := float64(i + 1)
		for _, v := range m.Samples {
			dots = append(dots, plotter.XY{X: x, Y: v})
			ymin, ymax = min(ymin, v), max(ymax, v)
		}
		medians = append(medians, plotter.XY{X: x, Y: m.Median})
	}
	p.Y.Label.Text = ref.Unit
	if ref.Better != "" {
		p.Y.Label.Text += " (" + string(ref.Better) + " is better)"
	}
	sc, err := plotter.NewScatter(dots)
	if err != nil {
		return fmt.Errorf("benchdata: plot %s: %w", name, err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Gray{Y: 140}, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
	l, err := plotter.NewLine(medians)
	if err != nil {
		return fmt.Errorf("benchdata: plot %s: %w", name, err)
	}
	l.Width = vg.Points(1.5)
	l.Color = color.RGBA{B: 200, A: 255}
	p.Add(sc, l)
	p.Legend.Add("samples", sc)
	p.Legend.Add("median", l)
	// Bottom right: the y axis starts at 0, so the data sit above the legend.
	for k, cp := range ChangePoints(series, ref.MinEffect) {
		x := float64(cp) + 0.5 // between the last night of the old level and the first of the new
		v, _ := plotter.NewLine(plotter.XYs{{X: x, Y: ymin}, {X: x, Y: ymax}})
		v.Color, v.Width = color.RGBA{R: 220, A: 255}, vg.Points(1.5)
		v.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(v)
		if k == 0 {
			p.Legend.Add("change point", v)
		}
	}
	p.X.Min = 0.5
	p.X.Max = float64(len(nights)) + 0.5
	if err := p.Save(8*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("benchdata: plot %s: %w", path, err)
	}
	return nil
}
