package analysis

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/polebench/polebench/figure"
)

// faultLook is how a fault kind is shaded and named in the legend.
var faultLook = []struct {
	kind   string
	legend string
	color  color.Color
	edge   color.Color
}{
	{FaultCrash, "leader crash until a new leader commits", color.NRGBA{R: 230, G: 60, B: 60, A: 45}, color.Black},
	{FaultDown, "server down (killed)", color.NRGBA{R: 90, G: 90, B: 90, A: 55}, nil},
	{FaultCut, "links cut (outdate, partition)", color.NRGBA{R: 120, G: 70, B: 200, A: 55}, nil},
	{FaultPause, "server paused", color.NRGBA{R: 230, G: 180, B: 0, A: 70}, nil},
	{FaultOther, "other fault", color.NRGBA{A: 0}, color.NRGBA{R: 120, G: 70, B: 200, A: 255}},
}

// evidenceStall is the host's stalls' shade: lighter than latency.png's, since a busy
// host stalls hundreds of times a run and the faults must read through.
var evidenceStall = color.NRGBA{R: stallColor.R, G: stallColor.G, B: stallColor.B, A: 80}

// TimelineFigure is what PlotRunTimeline drew beyond the image: a note for the caption.
type TimelineFigure struct {
	figure.Saved
	Note   string // the y axis's cut, when the crash's spike goes above it
	YLabel string
	Faults []string // the faults shaded, named
}

// PlotRunTimeline draws a run's latency per DC over time (timeseries.csv) with every
// fault shaded (events.jsonl: the crash until the new leader's first commit, kills,
// cut links, pauses), the host's stalls where the run measured them (hiccups.csv),
// the model's mean per DC dashed before and after the crash, and the windows its
// numbers come from, into base.png and base.svg.
func PlotRunTimeline(rd *RunData, title, base string) (*TimelineFigure, error) {
	s := rd.Series
	if len(s.DCs) == 0 {
		return nil, fmt.Errorf("analysis: %s: an empty time series", rd.Dir)
	}
	p := figure.New(title, "time since the load started (s)", fmt.Sprintf("mean latency per %s (ms)", BucketWords(s.Bucket)))
	leg := figure.NewLegend()
	end := rd.End()
	out := &TimelineFigure{}
	spans := Faults(rd.Events, end)
	text := figure.TextStyle(8, color.Gray{Y: 40})
	var labels []figure.Span
	// The host's stalls first: the faults' shades and edges stay visible above them.
	stallEntry := func() {}
	if rd.HostMeasured {
		var long []HostStall
		for _, st := range rd.Stalls {
			if ms(st.To-st.From) >= StallMS {
				long = append(long, st)
			}
		}
		b := figure.Bands{Color: evidenceStall}
		for _, sp := range union(long) {
			b.Spans = append(b.Spans, figure.Span{From: sp.from.Seconds(), To: sp.to.Seconds()})
		}
		p.Add(b)
		stallEntry = func() { leg.Add(fmt.Sprintf("host stall ≥ %g ms (%d)", StallMS, len(b.Spans)), b) }
	}
	for _, look := range faultLook {
		var b figure.Bands
		for _, f := range spans {
			if f.Kind == look.kind {
				b.Spans = append(b.Spans, figure.Span{From: f.From.Seconds(), To: f.To.Seconds(), Label: f.Label})
				out.Faults = append(out.Faults, fmt.Sprintf("%s (%.1f-%.1f s)", f.Label, f.From.Seconds(), f.To.Seconds()))
			}
		}
		if len(b.Spans) == 0 {
			continue
		}
		b.Color, b.Edge = look.color, look.edge
		labels = append(labels, b.Spans...)
		p.Add(b)
		leg.Add(look.legend, b)
	}
	stallEntry() // in the legend after the faults
	var peak, tmax float64
	model := map[string]map[string]float64{}
	for i, dc := range s.DCs {
		var xys plotter.XYs
		for _, pt := range s.Points[dc] {
			if pt.Count > 0 {
				xys = append(xys, plotter.XY{X: pt.T, Y: pt.MeanMS})
				peak, tmax = math.Max(peak, pt.MeanMS), math.Max(tmax, pt.T)
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("analysis: plot: %w", err)
		}
		l.Color, l.Width = figure.DCColor(dc, i), vg.Points(1.3)
		p.Add(l)
		leg.Add(dc, l)
	}
	crash := 0.0
	for _, f := range spans {
		if f.Kind == FaultCrash {
			crash = f.From.Seconds()
		}
	}
	for i, dc := range s.DCs {
		labeled := false
		for _, w := range []string{"before", "after"} {
			st, ok := rd.Summary.LatencyMS[w][dc]
			if !ok || st.ModelMS == nil {
				continue
			}
			if model[w] == nil {
				model[w] = map[string]float64{}
			}
			model[w][dc] = *st.ModelMS
			from, to := 0.0, end.Seconds()
			if crash > 0 && w == "before" {
				to = crash
			} else if crash > 0 {
				from = crash
			}
			l, _ := plotter.NewLine(plotter.XYs{{X: from, Y: *st.ModelMS}, {X: to, Y: *st.ModelMS}})
			l.Color, l.Width = figure.DCColor(dc, i), vg.Points(1.1)
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			p.Add(l)
			if !labeled {
				leg.Add(dc+", model", l)
				labeled = true
			}
		}
	}
	var windows []figure.Span
	if w := rd.Summary.Windows.Before; w != nil {
		windows = append(windows, figure.Span{From: w.From, To: w.To, Label: "\"before\" window"})
	}
	if w := rd.Summary.Windows.After; w != nil {
		windows = append(windows, figure.Span{From: w.From, To: w.To, Label: "\"after\" window"})
	}
	if len(windows) > 0 {
		p.Add(figure.Brackets{Spans: windows, Color: color.Gray{Y: 110}, Text: text})
	}
	slices.SortStableFunc(labels, func(a, b figure.Span) int { return cmp.Compare(a.From, b.From) })
	p.Add(figure.SpanLabels{Spans: labels, Text: text})
	top := YClip(model)
	if len(model) == 0 {
		top = math.Max(100, peak)
	}
	p.Y.Min = 0
	if peak > top {
		p.Y.Max = top
		out.Note = fmt.Sprintf("The y axis is cut at %.0f ms, three times the slowest model DC: the crash's spike peaks at %.0f ms.", top, peak)
	} else {
		p.Y.Max = math.Max(peak, top/3) * 1.1
	}
	p.X.Min, p.X.Max = 0, math.Max(end.Seconds(), tmax)
	p.X.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	p.Y.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	saved, err := figure.Save(p, leg, figure.SmallWidth, figure.SmallHeight, base, nil)
	if err != nil {
		return nil, err
	}
	out.Saved = saved
	out.YLabel = p.Y.Label.Text
	return out, nil
}

// percentileXs are the x values (1/(1-q)) a percentile curve is drawn at, for n
// recorded values: 24 per decade from the median's neighbourhood to 1-1/n.
func percentileXs(n int64) []float64 {
	xs := []float64{1}
	for x := 1.0; x < float64(n); {
		x *= math.Pow(10, 1.0/24)
		xs = append(xs, math.Min(x, float64(n)))
	}
	return xs
}

// PlotRunPercentiles draws a run's latency percentiles per DC from its HDR logs
// (hdr-<window>-<dc>.hlog), before the crash dashed and after it solid, against
// 1/(1-p) on a log axis (as latency benchmarks plot them: the tail gets the room),
// into base.png and base.svg.
func PlotRunPercentiles(rd *RunData, title, base string) (figure.Saved, error) {
	p := figure.New(title, "percentile (log scale of 1/(1-p))", "latency (ms)")
	leg := figure.NewLegend()
	var dcs []string
	for _, byDC := range rd.Histograms {
		for dc := range byDC {
			if dc != All && !slices.Contains(dcs, dc) {
				dcs = append(dcs, dc)
			}
		}
	}
	slices.Sort(dcs)
	if len(dcs) == 0 {
		return figure.Saved{}, fmt.Errorf("analysis: %s: no HDR log per DC (hdr-<window>-<dc>.hlog)", rd.Dir)
	}
	xmax, ymax := 2.0, 0.0
	styles := map[string]struct {
		dashes []vg.Length
		width  vg.Length
		legend string
	}{
		"before": {[]vg.Length{vg.Points(5), vg.Points(3)}, vg.Points(1.2), "before the crash"},
		"after":  {nil, vg.Points(2), "after the crash"},
	}
	for i, dc := range dcs {
		labeled := false
		for _, w := range []string{"before", "after"} {
			h := rd.Histograms[w][dc]
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			var xys plotter.XYs
			for _, x := range percentileXs(h.TotalCount()) {
				q := 100 * (1 - 1/x)
				v := float64(h.ValueAtQuantile(q)) / 1e6
				xys = append(xys, plotter.XY{X: x, Y: v})
				ymax = math.Max(ymax, v)
			}
			xmax = math.Max(xmax, xys[len(xys)-1].X)
			l, err := plotter.NewLine(xys)
			if err != nil {
				return figure.Saved{}, err
			}
			st := styles[w]
			l.Color, l.Width, l.Dashes = figure.DCColor(dc, i), st.width, st.dashes
			p.Add(l)
			if !labeled {
				sw, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: 0}})
				sw.Color, sw.Width = figure.DCColor(dc, i), vg.Points(2)
				var counts []string
				for _, w2 := range []string{"before", "after"} {
					if h2 := rd.Histograms[w2][dc]; h2 != nil {
						counts = append(counts, fmt.Sprintf("%d %s", h2.TotalCount(), w2))
					}
				}
				leg.Add(fmt.Sprintf("%s (%s)", dc, strings.Join(counts, ", ")), sw)
				labeled = true
			}
		}
	}
	for _, w := range []string{"before", "after"} {
		st := styles[w]
		l, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: 0}})
		l.Color, l.Width, l.Dashes = color.Gray{Y: 60}, st.width, st.dashes
		leg.Add(st.legend, l)
	}
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = 1, xmax
	p.X.Tick.Marker = plot.TickerFunc(figure.PercentileTicks)
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	p.Y.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	return figure.Save(p, leg, figure.SmallWidth, figure.SmallHeight, base, nil)
}

// BucketWords is a bucket's width as an axis says it: "500 ms", "1 s".
func BucketWords(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return strings.TrimSuffix(fmt.Sprintf("%g s", d.Seconds()), ".0")
}
