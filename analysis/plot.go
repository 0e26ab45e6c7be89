package analysis

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"
	"time"

	"github.com/polebench/polebench/figure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotOptions configures the Fig. 4b-style time series plot.
type PlotOptions struct {
	Title   string
	Crash   time.Duration // vertical line; 0: none
	Elected time.Duration // vertical dotted line; 0: none
	// Model holds predicted mean latencies in ms per window ("before", "after",
	// "placed") and DC, drawn as dashed horizontal lines in the DC's colour, each over
	// the stretch its leader led: "before" up to the crash, "after" from the crash to
	// the placement move (or the end), "placed" from the move on.
	Model map[string]map[string]float64
	// Moved is when a placement controller moved the leader to PlacedLeader: a
	// vertical line, where the model's line changes leader; 0: no move.
	Moved        time.Duration
	PlacedLeader int
	// Windows are the spans the summary's numbers come from, marked and named along
	// the top, so that a reader sees which stretch each number is.
	Windows []Window
	YMaxMS  float64 // clip the y axis (the crash spike can dwarf the rest); 0: automatic
	// Stalls are shaded behind the lines: spans in which a metered process stalled for
	// StallMS or more (the host's, not the system's).
	Stalls   []HostStall
	WidthPx  int // default 1200
	HeightPx int // default 600
}

// pngDPI is the resolution gonum/plot renders PNGs at: pixels = inches × 96.
const pngDPI = 96

// PlotTimeSeries draws latency per DC over time and saves it to path (.png or .svg).
func PlotTimeSeries(s *Series, o PlotOptions, path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("analysis: plot %s: want a .png or .svg file", path)
	}
	if len(s.DCs) == 0 {
		return fmt.Errorf("analysis: plot %s: empty series", path)
	}
	if o.WidthPx <= 0 {
		o.WidthPx = 1200
	}
	if o.HeightPx <= 0 {
		o.HeightPx = 600
	}
	p := plot.New()
	p.Title.Text = o.Title
	p.X.Label.Text = "time since start (s)"
	p.Y.Label.Text = fmt.Sprintf("mean latency per %v (ms)", s.Bucket)
	p.X.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	p.Y.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min = 0
	if bands := shadeStalls(o.Stalls); len(bands) > 0 {
		p.Add(bands) // first: behind the lines
		p.Legend.Add(fmt.Sprintf("host stall ≥%g ms", StallMS), bands)
	}

	var tmax, ymax float64
	for i, dc := range s.DCs {
		var xys plotter.XYs
		for _, pt := range s.Points[dc] {
			if pt.Count > 0 {
				xys = append(xys, plotter.XY{X: pt.T, Y: pt.MeanMS})
				tmax, ymax = max(tmax, pt.T), max(ymax, pt.MeanMS)
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("analysis: plot: %w", err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(dc, l)
	}
	tmax += s.Bucket.Seconds() / 2
	for i, dc := range s.DCs {
		labeled := false
		for _, w := range []string{"before", "after", "placed"} {
			v, ok := o.Model[w][dc]
			if !ok {
				continue
			}
			from, to := o.modelSpan(w, tmax)
			l, _ := plotter.NewLine(plotter.XYs{{X: from, Y: v}, {X: to, Y: v}})
			l.Color = plotutil.Color(i)
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			p.Add(l)
			ymax = max(ymax, v)
			if !labeled {
				p.Legend.Add(dc+" model", l)
				labeled = true
			}
		}
	}
	if o.YMaxMS > 0 {
		p.Y.Max = o.YMaxMS
		ymax = o.YMaxMS
	}
	vline := func(at time.Duration, label string, dashes []vg.Length, c color.Color) {
		if at <= 0 {
			return
		}
		l, _ := plotter.NewLine(plotter.XYs{{X: at.Seconds(), Y: 0}, {X: at.Seconds(), Y: ymax}})
		l.Color, l.Dashes, l.Width = c, dashes, vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(label, l)
	}
	vline(o.Crash, "leader crash", nil, color.Black)
	vline(o.Elected, "new leader elected", []vg.Length{vg.Points(2), vg.Points(2)}, color.Gray{Y: 110})
	vline(o.Moved, fmt.Sprintf("leader placed on p%d", o.PlacedLeader), []vg.Length{vg.Points(8), vg.Points(3)}, placedColor)
	if err := markWindows(p, o.Windows, tmax, ymax); err != nil {
		return fmt.Errorf("analysis: plot %s: %w", path, err)
	}

	w := vg.Length(o.WidthPx) * vg.Inch / pngDPI
	h := vg.Length(o.HeightPx) * vg.Inch / pngDPI
	if err := figure.SavePlot(p, w, h, path); err != nil {
		return fmt.Errorf("analysis: saving plot %s: %w", path, err)
	}
	return nil
}

// placedColor is the placement move's line.
var placedColor = color.RGBA{R: 0, G: 120, B: 60, A: 255}

// modelSpan is the stretch of the x axis (s) over which window w's model line is
// drawn: the time its leader led, so the line steps where the leader changed.
func (o PlotOptions) modelSpan(w string, tmax float64) (from, to float64) {
	crash, moved := o.Crash.Seconds(), o.Moved.Seconds()
	switch {
	case o.Crash == 0:
		return 0, tmax
	case w == "before":
		return 0, crash
	case w == "after" && o.Moved > 0:
		return crash, moved
	case w == "placed" && o.Moved > 0:
		return moved, tmax
	}
	return crash, tmax
}

// markWindows draws each window as a bar along the top of the plot at y, named above
// it where it is wide enough to carry its name (an after window cut short by a
// placement move can be a fraction of a second).
func markWindows(p *plot.Plot, ws []Window, tmax, y float64) error {
	var lbl plotter.XYLabels
	for _, w := range ws {
		bar, err := plotter.NewLine(plotter.XYs{{X: w.From.Seconds(), Y: 0.97 * y}, {X: w.To.Seconds(), Y: 0.97 * y}})
		if err != nil {
			return err
		}
		bar.Color, bar.Width = color.Gray{Y: 90}, vg.Points(3)
		p.Add(bar)
		if (w.To - w.From).Seconds() >= tmax/12 {
			lbl.XYs = append(lbl.XYs, plotter.XY{X: (w.From + w.To).Seconds() / 2, Y: 0.97 * y})
			lbl.Labels = append(lbl.Labels, w.Name+" window")
		}
	}
	if len(lbl.XYs) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(lbl)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
	}
	l.Offset.Y = vg.Points(3)
	p.Add(l)
	return nil
}

// stallBands shades spans of the run's clock over the whole height of the plot. It has
// no data range of its own: the stalls never stretch the axes.
type stallBands []span

func shadeStalls(stalls []HostStall) stallBands {
	var long []HostStall
	for _, st := range stalls {
		if ms(st.To-st.From) >= StallMS {
			long = append(long, st)
		}
	}
	return stallBands(union(long))
}

func (b stallBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, s := range b {
		x0, x1 := trX(s.from.Seconds()), trX(s.to.Seconds())
		if x1 < c.Min.X || x0 > c.Max.X {
			continue
		}
		if x1-x0 < vg.Points(1.5) { // a 5 ms stall in a 60 s plot is narrower than a pixel
			x1 = x0 + vg.Points(1.5)
		}
		x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
		c.FillPolygon(stallShade, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

// Thumbnail draws the legend's swatch.
func (b stallBands) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(stallShade, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// stallShade is stallColor, light enough that the lines read through it.
var stallShade = color.NRGBA{R: stallColor.R, G: stallColor.G, B: stallColor.B, A: 110}
