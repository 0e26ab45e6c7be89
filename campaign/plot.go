package campaign

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/figure"
)

// DefaultMetrics are plotted when a campaign names none.
var DefaultMetrics = []string{"latency_ms.after.all.mean", "recovery_ms", "election_ms"}

// Figure styles.
const (
	StyleBars  = "bars"  // a group of bars per category (oracle, or series at each x)
	StyleLines = "lines" // one line per series over a numeric x
)

// Kinds of figure.
const (
	KindBars        = "bars"
	KindLines       = "lines"
	KindTimeline    = "timeline"    // a representative run's latency over time, faults shaded
	KindPercentiles = "percentiles" // its latency percentiles per DC before and after the crash
)

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

func (c *Campaign) values(field string) []string {
	for _, a := range c.Vary {
		if a.Field == field {
			return a.Values
		}
	}
	return nil
}

// Figure is one drawn figure of a campaign.
type Figure struct {
	Kind    string
	Title   string
	Metrics []string // what a result figure shows (KindBars, KindLines)
	XLabel  string
	YLabel  string
	Caption string // what the marks mean, in words
	PNG     string // file names in the campaign directory
	SVG     string
	// Spots are the measured points in the image, each linked to a run directory
	// (relative to the campaign directory).
	Spots []figure.Placed
	// Run is the run directory an evidence figure shows (relative to the campaign
	// directory); "" for a result figure.
	Run string
}

// figSpec is one result figure: its metrics and its style.
type figSpec struct {
	metrics []string
	bars    bool
}

// figSpecs are the campaign's result figures: bars where x is a category (the oracle)
// or the campaign asks for bars, with the latency metrics of one statistic in one
// figure (a bar per DC, Fig. 6); lines over a numeric x, a figure per metric.
func (c *Campaign) figSpecs() []figSpec {
	metrics := c.Plot.Metrics
	if len(metrics) == 0 {
		metrics = DefaultMetrics
	}
	xField, _ := c.axes()
	_, numeric := numericX(xField, c.values(xField))
	bars := c.Plot.Style == StyleBars || (c.Plot.Style == "" && !numeric)
	var out []figSpec
	byStat := map[string]int{} // a latency statistic -> its figure
	for _, m := range metrics {
		if _, _, stat, ok := latencyKey(m); ok && bars {
			if i, ok := byStat[stat]; ok {
				out[i].metrics = append(out[i].metrics, m)
				continue
			}
			byStat[stat] = len(out)
		}
		out = append(out, figSpec{metrics: []string{m}, bars: bars})
	}
	for _, f := range out { // the DCs in order, all of them last (Fig. 6)
		slices.SortStableFunc(f.metrics, func(a, b string) int {
			wa, da, _, _ := latencyKey(a)
			wb, db, _, _ := latencyKey(b)
			if wa != wb {
				return 0
			}
			return cmp.Compare(dcOrder(da), dcOrder(db))
		})
	}
	return out
}

func dcOrder(dc string) string {
	if dc == "all" {
		return "\uffff"
	}
	return dc
}

// Draw draws the campaign's figures in the paper's form from results.csv (so they can
// be redrawn without rerunning) and, from one representative run's directory, the
// evidence behind them: its latency over time with every fault shaded, and its
// latency percentiles per DC before and after the crash.
//
// Bars (Fig. 6, 7c) or lines over a numeric x (Fig. 7a, 7b, 8a, 8b): the mean of a
// point's runs with its 95 % Student-t interval as whiskers, the analytic model as
// dashes, the paper's values as crosses. A point whose runs elected different leaders
// is drawn once per leader, with its count: they are never averaged together.
func Draw(dir string, c *Campaign) ([]Figure, error) {
	rows, err := ReadResults(dir, c)
	if err != nil {
		return nil, err
	}
	var figs []Figure
	for i, fs := range c.figSpecs() {
		f, err := c.drawResult(dir, rows, fs, i)
		if err != nil {
			return figs, err
		}
		if f != nil {
			figs = append(figs, *f)
		}
	}
	ev, err := c.drawEvidence(dir, rows)
	if err != nil {
		return figs, &EvidenceError{Campaign: c.Name, Err: err}
	}
	return append(figs, ev...), nil
}

// EvidenceError is Draw's error when the result figures were drawn but the evidence
// could not be (the representative run's directory lacks a file): a report shows the
// figures and says why the evidence is missing.
type EvidenceError struct {
	Campaign string
	Err      error
}

func (e *EvidenceError) Error() string { return "no evidence figures: " + e.Err.Error() }

func (e *EvidenceError) Unwrap() error { return e.Err }

func (c *Campaign) title() string {
	if c.Title != "" {
		return c.Title
	}
	return c.Name
}

func (c *Campaign) drawResult(dir string, rows []Row, fs figSpec, i int) (*Figure, error) {
	any := false
	for _, r := range rows {
		for _, m := range fs.metrics {
			_, ok := r.Metrics[m]
			any = any || ok
		}
	}
	if !any {
		return nil, nil // no run measured it (say, recovery without a crash)
	}
	title := c.title()
	if i > 0 {
		title += ": " + metricShort(fs.metrics[0])
	}
	base := c.Name + "-" + strings.NewReplacer(".", "_", "/", "_").Replace(strings.Join(fs.metrics, "+"))
	if len(fs.metrics) > 1 {
		_, _, stat, _ := latencyKey(fs.metrics[0])
		base = c.Name + "-latency_" + stat + "_by_dc"
	}
	var f *Figure
	var err error
	if fs.bars {
		f, err = c.drawBars(dir, rows, fs.metrics, title, base)
	} else {
		f, err = c.drawLines(dir, rows, fs.metrics[0], title, base)
	}
	if err != nil {
		return nil, fmt.Errorf("campaign %s: figure %s: %w", c.Name, strings.Join(fs.metrics, ", "), err)
	}
	return f, nil
}

// at is the map PaperValue takes for a point.
func at(p Point) map[string]string {
	m := map[string]string{}
	for _, s := range p.Settings {
		m[s.Name] = s.Value
	}
	return m
}

// pointsAt are the points with the given x and series values ("" fields match all).
func (c *Campaign) pointsAt(xField, xv, sField, sv string) []Point {
	var out []Point
	for _, p := range c.Points() {
		if (xField == "" || p.Value(xField) == xv) && (sField == "" || p.Value(sField) == sv) {
			out = append(out, p)
		}
	}
	return out
}

func runLink(p Point, rep int) string {
	return filepath.ToSlash(filepath.Join("runs", p.Dir(), fmt.Sprintf("rep%d", rep)))
}

// spotTitle says what a point shows, for the link's tooltip.
func spotTitle(p Point, g Group, metric string, a *analysis.Agg, model *analysis.Agg) string {
	s := settingsString(p.Settings)
	if who := g.Who(); who != "" {
		s += ", " + who + " elected"
	}
	s += fmt.Sprintf(": %s %s", metricShort(metric), fmtAgg(a))
	if model != nil {
		s += fmt.Sprintf(", model %.1f", model.Mean)
	}
	return s
}

var (
	ink        = color.Gray{Y: 40}
	modelStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(2)}
)

func whiskers(pts plotter.XYs, errs plotter.YErrors, c color.Color) (*plotter.YErrorBars, error) {
	b, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return nil, err
	}
	b.Color = c
	b.LineStyle.Width = vg.Points(1.2)
	b.CapWidth = vg.Points(7)
	return b, nil
}

// yLabel is the common label of a figure's metrics.
func yLabel(metrics []string) string {
	if len(metrics) == 1 {
		return MetricLabel(metrics[0])
	}
	w0, dc0, stat, _ := latencyKey(metrics[0])
	sameW, sameDC := true, true
	for _, m := range metrics[1:] {
		w, dc, _, _ := latencyKey(m)
		sameW, sameDC = sameW && w == w0, sameDC && dc == dc0
	}
	switch {
	case sameW:
		return fmt.Sprintf("%s latency %s (ms)", statWord(stat), windowWord(w0))
	case sameDC:
		return fmt.Sprintf("%s latency, %s (ms)", statWord(stat), dcWords(dc0))
	}
	return statWord(stat) + " latency (ms)"
}

// barName names one of several metrics of a bar figure by what differs: the DC or
// the window.
func barName(metrics []string, m string) string {
	w, dc, _, _ := latencyKey(m)
	w0, _, _, _ := latencyKey(metrics[0])
	for _, x := range metrics {
		if xw, _, _, _ := latencyKey(x); xw != w0 {
			if _, xdc, _, _ := latencyKey(x); xdc == dc {
				return windowWord(w)
			}
			return windowWord(w) + ", " + dcWords(dc)
		}
	}
	return dcWords(dc)
}

func (c *Campaign) drawBars(dir string, rows []Row, metrics []string, title, base string) (*Figure, error) {
	xField, sField := c.axes()
	xVals, sVals := c.values(xField), c.values(sField)
	if xField == "" {
		xVals = []string{""}
	}
	if sField == "" {
		sVals = []string{""}
	}
	clusters := c.barClusters(rows, metrics[0], xField, sField, xVals, sVals)
	if len(clusters) == 0 {
		return nil, nil
	}
	nb := len(metrics)
	xl := FieldLabel(xField, xVals)
	if sField != "" {
		xl = FieldLabel(sField, sVals) + ", at each " + strings.SplitN(FieldLabel(xField, xVals), ":", 2)[0]
	}
	p := figure.New(title, xl, yLabel(metrics))
	l := &barLayers{metrics: metrics, bw: min(0.8/float64(nb), 0.5), spots: &figure.Spots{}, colors: map[string]color.Color{}}
	for _, cl := range clusters {
		l.ticks = append(l.ticks, clusterTick(cl, xField, sField))
		c.addBars(l, cl, xVals, sField)
	}
	leg, err := l.draw(p)
	if err != nil {
		return nil, err
	}
	p.X.Tick.Marker = plot.ConstantTicks(l.ticks)
	p.X.Min, p.X.Max = clusters[0].at-0.6, clusters[len(clusters)-1].at+0.6
	p.Y.Min, p.Y.Max = 0, l.top*1.12
	p.Y.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	caption := "Bars: the mean of each point's runs"
	if nb > 1 {
		caption += ", one bar per " + map[bool]string{true: "data center", false: "window"}[strings.HasPrefix(barName(metrics, metrics[0]), "D") || barName(metrics, metrics[0]) == "all data centers"]
	}
	caption += "; whiskers: the 95 % Student-t interval (two runs or more); black dashes: the analytic model for the leader the runs elected; red crosses: the paper's values. Under each group, the leader its runs elected; runs that elected different leaders are separate groups, with their count. Each bar links to a run behind it."
	return c.save(dir, p, leg, base, title, metrics, caption, l.spots, KindBars)
}

// barCluster is one group of bars: a point's runs that elected one leader, at its place
// on the x axis.
type barCluster struct {
	p      Point
	g      Group
	xv, sv string
	si     int
	at     float64
}

// modelLegend names the model's dashes: for the leader who led metric's window.
func modelLegend(metric string) string {
	if LeaderColumn(metric) == FinalLeader {
		return "model, for the leader the runs ended with"
	}
	return "model, for the leader elected"
}

// barClusters places a cluster per group of every point (its runs grouped by who led
// metric's window), x value by x value, the series side by side at each.
func (c *Campaign) barClusters(rows []Row, metric, xField, sField string, xVals, sVals []string) []barCluster {
	var clusters []barCluster
	pos := 0.0
	for xi, xv := range xVals {
		if xi > 0 && sField != "" {
			pos += 0.5 // a wider gap between x values than between the series at one x
		}
		for si, sv := range sVals {
			for _, p := range c.pointsAt(xField, xv, sField, sv) {
				for _, g := range Groups(rows, p, metric) {
					pos++
					clusters = append(clusters, barCluster{p, g, xv, sv, si, pos})
				}
			}
		}
	}
	return clusters
}

// clusterTick names a cluster under it: its series or x value, and whom its runs elected.
func clusterTick(cl barCluster, xField, sField string) plot.Tick {
	var lines []string
	who := ""
	if w := cl.g.Who(); w != "" {
		who = "(" + w + ")"
	}
	if sField != "" {
		lines = append(lines, strings.TrimSpace(cl.sv+" "+who))
		if xField != "" {
			lines = append(lines, valueLabel(xField, cl.xv))
		}
	} else {
		lines = append(lines, valueLabel(xField, cl.xv))
		if who != "" {
			lines = append(lines, who)
		}
	}
	return plot.Tick{Value: cl.at, Label: strings.Join(lines, "\n")}
}

// barLayers is what a bar figure draws, gathered cluster by cluster: the bars, their
// intervals, the model's and the paper's values, the numbers over them, the links.
type barLayers struct {
	metrics                    []string
	bw                         float64 // a bar's width
	bars                       figure.Bars
	errPts, modelPts, paperPts plotter.XYs
	errs                       plotter.YErrors
	texts                      []figure.Text
	spots                      *figure.Spots
	ticks                      []plot.Tick
	top                        float64
	colors                     map[string]color.Color // per bar name, for the legend
}

// addBars adds a cluster's bars, one per metric, with what goes over each.
func (c *Campaign) addBars(l *barLayers, cl barCluster, xVals []string, sField string) {
	nb := len(l.metrics)
	for mi, m := range l.metrics {
		a := cl.g.Agg(m)
		if a == nil {
			continue
		}
		x := cl.at + (float64(mi)-float64(nb-1)/2)*l.bw
		col := l.color(m, mi, cl, xVals, sField)
		l.bars = append(l.bars, figure.Bar{X: x, Width: l.bw * 0.92, Y: a.Mean, Color: figure.Lighter(col, 0.15)})
		hi := a.Mean
		if a.CI95 != nil {
			l.errPts = append(l.errPts, plotter.XY{X: x, Y: a.Mean})
			l.errs = append(l.errs, struct{ Low, High float64 }{a.CI95.HalfWidth, a.CI95.HalfWidth})
			hi = a.CI95.High
		}
		model := cl.g.Agg(modelMetric(m))
		if model != nil {
			l.modelPts = append(l.modelPts, plotter.XY{X: x, Y: model.Mean})
			hi = max(hi, model.Mean)
		}
		if v, _, ok := PaperValue(c.Name, m, at(cl.p)); ok {
			l.paperPts = append(l.paperPts, plotter.XY{X: x, Y: v})
			hi = max(hi, v)
		}
		l.top = max(l.top, hi)
		l.texts = append(l.texts, figure.Text{X: x, Y: hi, DY: vg.Points(7), Text: strconv.FormatFloat(a.Mean, 'f', 1, 64)})
		rep := cl.g.Representative(m)
		l.spots.Add(x, a.Mean, runLink(cl.p, rep.Rep), spotTitle(cl.p, cl.g, m, a, model))
	}
}

// color is metric m's bar's colour in cl: a data center's (or the before window's
// grey) where there are several metrics, else the oracle's of the series or x value.
func (l *barLayers) color(m string, mi int, cl barCluster, xVals []string, sField string) color.Color {
	switch {
	case len(l.metrics) > 1:
		_, dc, _, _ := latencyKey(m)
		col := figure.DCColor(dc, mi)
		if w, _, _, _ := latencyKey(m); w == "before" && !strings.HasPrefix(barName(l.metrics, m), "D") && dc == "all" {
			col = figure.Lighter(color.Gray{Y: 90}, 0.45)
		}
		l.colors[barName(l.metrics, m)] = col
		return col
	case sField != "":
		return figure.OracleColor(cl.sv, cl.si)
	default:
		return figure.OracleColor(cl.xv, slices.Index(xVals, cl.xv))
	}
}

// draw adds the layers to p, and returns their legend.
func (l *barLayers) draw(p *plot.Plot) (*plot.Legend, error) {
	p.Add(l.bars)
	leg := figure.NewLegend()
	if len(l.metrics) > 1 {
		for _, m := range l.metrics {
			if col, ok := l.colors[barName(l.metrics, m)]; ok {
				leg.Add(barName(l.metrics, m), figure.Swatch{Color: figure.Lighter(col, 0.15)})
				delete(l.colors, barName(l.metrics, m))
			}
		}
	} else {
		leg.Add("mean of the runs", figure.Swatch{Color: color.Gray{Y: 200}})
	}
	if len(l.errPts) > 0 {
		w, err := whiskers(l.errPts, l.errs, ink)
		if err != nil {
			return nil, err
		}
		p.Add(w)
		leg.Add("95 % interval", figure.Whisker{Color: ink})
	}
	if len(l.modelPts) > 0 {
		d := figure.Dashes{XYs: l.modelPts, HalfX: l.bw * 0.5, Style: modelStyle}
		p.Add(d)
		leg.Add("model, for the leader elected", d)
	}
	if len(l.paperPts) > 0 {
		s, err := plotter.NewScatter(l.paperPts)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = figure.Cross(color.NRGBA{R: 200, A: 255})
		p.Add(s)
		leg.Add("the paper's value", s)
	}
	p.Add(figure.Texts{Items: l.texts, Style: figure.TextStyle(8, ink)})
	p.Add(l.spots)
	return leg, nil
}

func (c *Campaign) save(dir string, p *plot.Plot, leg *plot.Legend, base, title string, metrics []string, caption string, spots *figure.Spots, kind string) (*Figure, error) {
	saved, err := figure.Save(p, leg, figure.Width, figure.Height, filepath.Join(dir, base), spots)
	if err != nil {
		return nil, err
	}
	return &Figure{Kind: kind, Title: title, Metrics: metrics, XLabel: p.X.Label.Text, YLabel: p.Y.Label.Text, Caption: caption,
		PNG: base + ".png", SVG: base + ".svg", Spots: saved.Spots}, nil
}

func (c *Campaign) drawLines(dir string, rows []Row, metric, title, base string) (*Figure, error) {
	xField, sField := c.axes()
	xVals, sVals := c.values(xField), c.values(sField)
	pos, _ := numericX(xField, xVals)
	if sField == "" {
		sVals = []string{""}
	}
	xs := slices.Clone(xVals)
	slices.SortStableFunc(xs, func(a, b string) int { return cmpFloat(pos[a], pos[b]) })
	lo, hi := pos[xs[0]], pos[xs[len(xs)-1]]
	span := hi - lo
	if span == 0 {
		span = math.Max(1, math.Abs(hi))
	}
	p := figure.New(title, FieldLabel(xField, xVals), MetricLabel(metric))
	leg := figure.NewLegend()
	f := &lineLayers{metric: metric, pos: pos, spots: &figure.Spots{}}
	drawn := 0
	for si, sv := range sVals {
		col := figure.OracleColor(sv, si)
		off := 0.0
		if len(sVals) > 1 {
			off = (float64(si) - float64(len(sVals)-1)/2) * 0.012 * span
		}
		s := c.gatherSeries(f, rows, xField, sField, sv, xs, off, col)
		if len(s.main) == 0 {
			continue
		}
		drawn++
		if err := f.drawSeries(p, leg, s, sv, col); err != nil {
			return nil, err
		}
	}
	if drawn == 0 {
		return nil, nil
	}
	if err := f.draw(p, leg); err != nil {
		return nil, err
	}
	var ticks []plot.Tick
	for _, xv := range xs {
		ticks = append(ticks, plot.Tick{Value: pos[xv], Label: strconv.FormatFloat(pos[xv], 'f', -1, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = lo-0.06*span, hi+0.06*span
	p.Y.Min, p.Y.Max = 0, f.top*1.1
	p.Y.Tick.Marker = plot.TickerFunc(figure.NiceTicks)
	caption := "Each line: one oracle's mean over its runs at each " + strings.SplitN(FieldLabel(xField, xVals), ":", 2)[0] +
		"; whiskers: the 95 % Student-t interval (two runs or more); dashed: the analytic model for the leader the runs elected; crosses: the paper's values. " +
		"Runs that elected another leader than most of their point's are a grey triangle of their own, labelled with the leader and the count; the line goes through the most common leader's. Each point links to a run behind it."
	return c.save(dir, p, leg, base, title, []string{metric}, caption, f.spots, KindLines)
}

// lineLayers is what a line figure draws beside each series' line, gathered series by
// series: the runs that elected another leader than most of their point's, the paper's
// values, the split groups' labels, the links.
type lineLayers struct {
	metric              string
	pos                 map[string]float64 // each x value's place
	texts               []figure.Text
	spots               *figure.Spots
	others, othersModel plotter.XYs
	paper               []paperMark
	top                 float64
	modelled            bool // a model line or dash was drawn
}

// paperMark is one of the paper's values, in its series' colour.
type paperMark struct {
	xy plotter.XY
	c  color.Color
}

// lineSeries is one series' line through its points' most common leaders, the model
// for them and their intervals.
type lineSeries struct {
	main, model, errPts plotter.XYs
	errs                plotter.YErrors
}

// gatherSeries gathers series sv's points at each x of xs (offset by off), adding what is
// not its line to f.
func (c *Campaign) gatherSeries(f *lineLayers, rows []Row, xField, sField, sv string, xs []string, off float64, col color.Color) lineSeries {
	var s lineSeries
	for _, xv := range xs {
		for _, pt := range c.pointsAt(xField, xv, sField, sv) {
			for gi, g := range Groups(rows, pt, f.metric) {
				f.addGroup(&s, pt, gi, g, f.pos[xv]+off)
			}
			if v, _, ok := PaperValue(c.Name, f.metric, at(pt)); ok {
				f.paper = append(f.paper, paperMark{plotter.XY{X: f.pos[xv], Y: v}, col})
				f.top = max(f.top, v)
			}
		}
	}
	return s
}

// addGroup adds group gi of point pt at x: to s's line if it is the point's most common
// leader's, else to the others.
func (f *lineLayers) addGroup(s *lineSeries, pt Point, gi int, g Group, x float64) {
	a := g.Agg(f.metric)
	if a == nil {
		return
	}
	xy := plotter.XY{X: x, Y: a.Mean}
	m := g.Agg(modelMetric(f.metric))
	if gi == 0 {
		s.main = append(s.main, xy)
		if m != nil {
			s.model = append(s.model, plotter.XY{X: x, Y: m.Mean})
		}
	} else {
		f.others = append(f.others, xy)
		if m != nil {
			f.othersModel = append(f.othersModel, plotter.XY{X: x, Y: m.Mean})
		}
	}
	f.top = max(f.top, a.Mean)
	if m != nil {
		f.top = max(f.top, m.Mean)
	}
	if a.CI95 != nil {
		s.errPts = append(s.errPts, xy)
		s.errs = append(s.errs, struct{ Low, High float64 }{a.CI95.HalfWidth, a.CI95.HalfWidth})
		f.top = max(f.top, a.CI95.High)
	}
	if g.Split() {
		f.texts = append(f.texts, figure.Text{X: x, Y: a.Mean, DY: vg.Points(6), Text: fmt.Sprintf("p%d: %d of %d", g.Leader, len(g.Rows), g.Of)})
	}
	rep := g.Representative(f.metric)
	f.spots.Add(x, a.Mean, runLink(pt, rep.Rep), spotTitle(pt, g, f.metric, a, m))
}

// drawSeries draws series sv's line, its points, its intervals and its model in col.
func (f *lineLayers) drawSeries(p *plot.Plot, leg *plot.Legend, s lineSeries, sv string, col color.Color) error {
	l, err := plotter.NewLine(s.main)
	if err != nil {
		return err
	}
	l.Color, l.Width = col, vg.Points(1.8)
	sc, err := plotter.NewScatter(s.main)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
	p.Add(l, sc)
	name := sv
	if name == "" {
		name = "mean of the runs"
	}
	leg.Add(name, l, sc)
	if len(s.errPts) > 0 {
		w, err := whiskers(s.errPts, s.errs, col)
		if err != nil {
			return err
		}
		p.Add(w)
	}
	if len(s.model) > 0 {
		f.modelled = true
		ml, err := plotter.NewLine(s.model)
		if err != nil {
			return err
		}
		ml.Color, ml.Width = col, vg.Points(1.2)
		ml.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(ml)
		p.Add(figure.Dashes{XYs: s.model, HalfLen: vg.Points(6), Style: draw.LineStyle{Color: col, Width: vg.Points(1.6)}})
	}
	return nil
}

// draw adds what is not a series' line, after them: the other leaders' runs, the
// model's legend, the paper's values, the labels and the links.
func (f *lineLayers) draw(p *plot.Plot, leg *plot.Legend) error {
	grey := color.Gray{Y: 70}
	if len(f.others) > 0 {
		sc, err := plotter.NewScatter(f.others)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: grey, Radius: vg.Points(4.5), Shape: draw.TriangleGlyph{}}
		p.Add(sc)
		leg.Add("runs that elected another leader", sc)
		if len(f.othersModel) > 0 {
			f.modelled = true
			p.Add(figure.Dashes{XYs: f.othersModel, HalfLen: vg.Points(6), Style: draw.LineStyle{Color: grey, Width: vg.Points(1.6)}})
		}
	}
	if f.modelled {
		dl, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}})
		dl.Color, dl.Width, dl.Dashes = grey, vg.Points(1.2), []vg.Length{vg.Points(5), vg.Points(3)}
		leg.Add(modelLegend(f.metric), dl)
	}
	if len(f.paper) > 0 {
		for _, pa := range f.paper {
			s, err := plotter.NewScatter(plotter.XYs{pa.xy})
			if err != nil {
				return err
			}
			s.GlyphStyle = figure.Cross(pa.c)
			p.Add(s)
		}
		s, _ := plotter.NewScatter(plotter.XYs{{}})
		s.GlyphStyle = figure.Cross(grey)
		leg.Add("the paper's value", s)
	}
	p.Add(figure.Texts{Items: f.texts, Style: figure.TextStyle(8, ink)})
	p.Add(f.spots)
	return nil
}

func cmpFloat(a, b float64) int { return cmp.Compare(a, b) }
