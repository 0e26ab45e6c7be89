package analysis

import (
	"fmt"
	"image/color"
	"maps"
	"slices"

	"github.com/polebench/polebench/figure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// stallColor marks the host's stalls in every figure.
var stallColor = color.RGBA{R: 235, G: 120, B: 170, A: 255}

// PlotAnatomy draws, per window and DC, the model's latency as a bar of its parts
// (forward link, quorum round trip, commit back) beside the measured latency as a bar
// of where it went: the harness's send lag and client, poled's processing, the host's
// stalls where the run measured them, and the
// same three links as measured. Saved to path (.png or .svg).
func PlotAnatomy(a map[string]map[string]AnatomyStats, title, path string) error {
	type col struct {
		label string
		st    AnatomyStats
	}
	var cols []col
	for _, w := range []string{"before", "after"} {
		for _, dc := range slices.Sorted(maps.Keys(a[w])) {
			if st := a[w][dc]; dc != All && st.ModelMS != nil {
				cols = append(cols, col{w + " " + dc, st})
			}
		}
	}
	if len(cols) == 0 {
		return fmt.Errorf("analysis: plot %s: no window with both an anatomy and a model", path)
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "mean latency (ms): model (left) and measured (right) per DC"
	p.Y.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.label
	}
	p.NominalX(names...)

	const barW = 28
	links := []struct {
		name  string
		c     color.Color
		model func(*ModelParts) float64
		meas  func(map[string]float64) float64
	}{
		{"forward link", color.RGBA{R: 70, G: 130, B: 180, A: 255},
			func(m *ModelParts) float64 { return m.Forward }, func(ph map[string]float64) float64 { return ph["forward"] }},
		{"quorum round trip", color.RGBA{R: 60, G: 160, B: 90, A: 255},
			func(m *ModelParts) float64 { return m.Quorum }, quorumLinkMS},
		{"commit back", color.RGBA{R: 150, G: 110, B: 200, A: 255},
			func(m *ModelParts) float64 { return m.Back }, func(ph map[string]float64) float64 { return ph["commit_back"] }},
	}
	type part struct {
		name string
		c    color.Color
		meas func(map[string]float64) float64
	}
	ours := []part{
		{"send lag (harness)", color.RGBA{R: 230, G: 90, B: 70, A: 255}, func(ph map[string]float64) float64 { return max(ph["send_lag"], 0) }},
		{"client and sockets (harness)", color.RGBA{R: 240, G: 170, B: 60, A: 255}, ClientMS},
		{"processing (poled)", color.RGBA{R: 120, G: 120, B: 120, A: 255}, ProcessingMS},
	}
	for _, c := range cols {
		if c.st.PhasesMS["host_stall"] > 0 {
			ours = append(ours, part{"host stall (the host's)", stallColor, func(ph map[string]float64) float64 { return ph["host_stall"] }})
			break
		}
	}
	bars := func(f func(AnatomyStats) float64) plotter.Values {
		v := make(plotter.Values, len(cols))
		for i, c := range cols {
			v[i] = max(f(c.st), 0)
		}
		return v
	}
	var model, meas *plotter.BarChart
	stack := func(below **plotter.BarChart, v plotter.Values, offset vg.Length, c color.Color, legend string) error {
		b, err := plotter.NewBarChart(v, vg.Points(barW))
		if err != nil {
			return fmt.Errorf("analysis: plot %s: %w", path, err)
		}
		b.Offset, b.Color, b.LineStyle.Width = offset, c, vg.Points(0.5)
		if *below != nil {
			b.StackOn(*below)
		}
		*below = b
		p.Add(b)
		if legend != "" {
			p.Legend.Add(legend, b)
		}
		return nil
	}
	left, right := -vg.Points(barW/2+1), vg.Points(barW/2+1)
	for _, l := range links {
		if err := stack(&model, bars(func(st AnatomyStats) float64 { return l.model(st.ModelMS) }), left, l.c, l.name); err != nil {
			return err
		}
	}
	// The measured links at the bottom, level with the model's; what is poled's and
	// the harness's on top of them.
	for _, l := range links {
		if err := stack(&meas, bars(func(st AnatomyStats) float64 { return l.meas(st.PhasesMS) }), right, l.c, ""); err != nil {
			return err
		}
	}
	top := 0.0
	for i := len(ours) - 1; i >= 0; i-- {
		o := ours[i]
		if err := stack(&meas, bars(func(st AnatomyStats) float64 { return o.meas(st.PhasesMS) }), right, o.c, o.name); err != nil {
			return err
		}
	}
	for _, c := range cols {
		top = max(top, c.st.MeasuredMS, c.st.ModelMS.Total)
	}
	p.Y.Min, p.Y.Max = 0, 1.4*top // room for the legend above the bars
	w := vg.Length(max(600, 170*len(cols))) * vg.Inch / pngDPI
	if err := figure.SavePlot(p, w, 600*vg.Inch/pngDPI, path); err != nil {
		return fmt.Errorf("analysis: saving plot %s: %w", path, err)
	}
	return nil
}
