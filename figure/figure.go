// Package figure is the house style of polebench's figures: sans-serif text in sizes a
// reader can read, a legend beside the plot instead of over its data, fixed colours
// for oracles and data centers (the same in every figure), the few shapes the paper's
// figures need that gonum/plot lacks (bars placed by hand, short dashes for the model,
// shaded spans of time with their names), and where each point landed in the image,
// so that a report can link a point to the run behind it. Every figure is saved as
// PNG and SVG.
package figure

import (
	"bufio"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// DPI is the PNGs' resolution: 1.5 pixels per CSS pixel, sharp on most screens.
const DPI = 144

// Width and Height are a figure's default size (at 96 CSS pixels per inch: 864 × 456);
// SmallWidth and SmallHeight a figure's shown two side by side (720 × 442).
var (
	Width       = 9 * vg.Inch
	Height      = 4.75 * vg.Inch
	SmallWidth  = 7.5 * vg.Inch
	SmallHeight = 4.6 * vg.Inch
)

func sans(size float64) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(size)}
}

// New is an empty plot in the house style: the title, the axes' labels (words with
// units: "mean latency after the crash (ms)"), a light grid.
func New(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(13)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11)
		a.Tick.Label.Font = sans(9.5)
		a.Label.Padding = vg.Points(4)
	}
	p.X.Label.Text, p.Y.Label.Text = x, y
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 215}
	p.Add(g)
	return p
}

// NewLegend is a legend in the house style, drawn beside the plot by Save.
func NewLegend() *plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = sans(9.5)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(22)
	l.Padding = vg.Points(2)
	return &l
}

// TextStyle is small text for labels inside the plot.
func TextStyle(size float64, c color.Color) draw.TextStyle {
	s := plot.New().Title.TextStyle
	s.Font = sans(size)
	s.Color = c
	s.XAlign, s.YAlign = draw.XCenter, draw.YBottom
	return s
}

// Saved names a saved figure's files and where its spots landed.
type Saved struct {
	PNG, SVG string
	Spots    []Placed
}

// Save draws p with the legend in a strip to its right (nil or empty: no strip) and
// writes base+".png" and base+".svg".
func Save(p *plot.Plot, leg *plot.Legend, w, h vg.Length, base string, spots *Spots) (Saved, error) {
	out := Saved{PNG: base + ".png", SVG: base + ".svg"}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))
	if spots != nil {
		spots.placed = nil
	}
	drawAll(p, leg, draw.New(img), w)
	if spots != nil {
		for _, s := range spots.placed {
			out.Spots = append(out.Spots, Placed{X: float64(s.at.X / w), Y: 1 - float64(s.at.Y/h), Link: s.Link, Title: s.Title})
		}
	}
	svg := vgsvg.New(w, h)
	drawAll(p, leg, draw.New(svg), w)
	if err := writeTo(out.PNG, pngWriter(img)); err != nil {
		return out, err
	}
	if err := writeTo(out.SVG, svg.WriteTo); err != nil {
		return out, err
	}
	return out, nil
}

// SavePlot is plot.Save, with a PNG (path ending in .png) encoded at deflate's fastest
// level: plot.Save's picture, drawn at vgimg's default DPI.
func SavePlot(p *plot.Plot, w, h vg.Length, path string) error {
	if !strings.HasSuffix(path, ".png") {
		return p.Save(w, h, path)
	}
	c := vgimg.New(w, h)
	p.Draw(draw.New(c))
	return writeTo(path, pngWriter(c))
}

// pngEncoder encodes at deflate's fastest level: the same pixels as the default level,
// for a few percent more bytes, and the default's search and compression had been most
// of a simulated run's plotting (docs/performance.md).
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

func pngWriter(c *vgimg.Canvas) func(io.Writer) (int64, error) {
	return func(w io.Writer) (int64, error) {
		cw := &countWriter{w: w}
		b := bufio.NewWriter(cw)
		if err := pngEncoder.Encode(b, c.Image()); err != nil {
			return cw.n, err
		}
		err := b.Flush()
		return cw.n, err
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func writeTo(path string, write func(w io.Writer) (int64, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	_, werr := write(f)
	if err := f.Close(); werr == nil && err != nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("figure: writing %s: %w", path, werr)
	}
	return nil
}

func drawAll(p *plot.Plot, leg *plot.Legend, c draw.Canvas, w vg.Length) {
	if leg == nil || legendEmpty(leg) {
		p.Draw(c)
		return
	}
	r := leg.Rectangle(c)
	lw := r.Max.X - r.Min.X + vg.Points(14)
	lw = min(lw, w*0.42)
	p.Draw(draw.Crop(c, 0, -lw, 0, 0))
	strip := draw.Crop(c, w-lw+vg.Points(8), 0, 0, 0)
	// Level with the top of the plot's data, below the title.
	if p.Title.Text != "" {
		strip.Max.Y -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding + vg.Points(4)
	}
	leg.Draw(strip)
}

// legendEmpty says whether the legend has no entry (its entries are not exported: an
// empty legend is no taller than nothing).
func legendEmpty(l *plot.Legend) bool {
	r := l.Rectangle(draw.Canvas{})
	return r.Max.Y-r.Min.Y <= 0
}

// Spots records where points are drawn, for links from the image to what is behind
// each point. Add it to the plot last.
type Spots struct {
	want   []spot
	placed []spot
}

type spot struct {
	x, y        float64
	Link, Title string
	at          vg.Point
}

// Placed is a spot in the saved image: X and Y are fractions of the image's width and
// height from its top left corner.
type Placed struct {
	X, Y        float64
	Link, Title string
}

// Add records the data point (x, y) with a link and a title.
func (s *Spots) Add(x, y float64, link, title string) {
	s.want = append(s.want, spot{x: x, y: y, Link: link, Title: title})
}

// Plot records where the points land; it draws nothing.
func (s *Spots) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, w := range s.want {
		w.at = vg.Point{X: trX(w.x), Y: trY(w.y)}
		s.placed = append(s.placed, w)
	}
}

// Bar is one bar: centred on X, Width wide (in x units), from 0 to Y.
type Bar struct {
	X, Width, Y float64
	Color       color.Color
}

// Bars draws bars placed by hand (a group per category, a bar per data center in it).
type Bars []Bar

// Plot implements plot.Plotter.
func (b Bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, x := range b {
		x0, x1 := trX(x.X-x.Width/2), trX(x.X+x.Width/2)
		y0, y1 := trY(math.Max(0, p.Y.Min)), trY(x.Y)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(x.Color, c.ClipPolygonXY(pts))
		c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 60}, Width: vg.Points(0.5)}, c.ClipLinesXY(append(pts, pts[0]))...)
	}
}

// DataRange implements plot.DataRanger.
func (b Bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, 0
	for _, x := range b {
		xmin, xmax = math.Min(xmin, x.X-x.Width/2), math.Max(xmax, x.X+x.Width/2)
		ymax = math.Max(ymax, x.Y)
	}
	return
}

// Swatch is a legend thumbnail: a filled square in a colour.
type Swatch struct{ Color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s Swatch) Thumbnail(c *draw.Canvas) {
	m := (c.Max.X - c.Min.X - (c.Max.Y - c.Min.Y)) / 2
	pts := []vg.Point{{X: c.Min.X + m, Y: c.Min.Y}, {X: c.Max.X - m, Y: c.Min.Y}, {X: c.Max.X - m, Y: c.Max.Y}, {X: c.Min.X + m, Y: c.Max.Y}}
	c.FillPolygon(s.Color, pts)
	c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 60}, Width: vg.Points(0.5)}, append(pts, pts[0]))
}

// Dashes draws a short horizontal line at each point: the model's value on a bar
// (HalfX in x units) or beside a point (HalfLen).
type Dashes struct {
	XYs   plotter.XYs
	HalfX float64
	// HalfLen is used when HalfX is 0.
	HalfLen vg.Length
	Style   draw.LineStyle
}

// Plot implements plot.Plotter.
func (d Dashes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, pt := range d.XYs {
		y := trY(pt.Y)
		x0, x1 := trX(pt.X)-d.HalfLen, trX(pt.X)+d.HalfLen
		if d.HalfX > 0 {
			x0, x1 = trX(pt.X-d.HalfX), trX(pt.X+d.HalfX)
		}
		c.StrokeLines(d.Style, c.ClipLinesXY([]vg.Point{{X: x0, Y: y}, {X: x1, Y: y}})...)
	}
}

// DataRange implements plot.DataRanger.
func (d Dashes) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = plotter.XYRange(d.XYs)
	return xmin - d.HalfX, xmax + d.HalfX, ymin, ymax
}

// Thumbnail implements plot.Thumbnailer.
func (d Dashes) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(d.Style, c.Min.X+vg.Points(4), y, c.Max.X-vg.Points(4), y)
}

// Span is a stretch of the x axis with its name, drawn at the top of its band.
type Span struct {
	From, To float64
	Label    string
}

// Bands shades spans over the whole height of the plot (faults, host stalls). They
// have no data range: they never stretch the axes.
type Bands struct {
	Spans []Span
	Color color.Color
	// Edge, when set, draws each span's start as a solid vertical line (a crash).
	Edge color.Color
}

// Plot implements plot.Plotter.
func (b Bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, s := range b.Spans {
		x0, x1 := trX(s.From), trX(s.To)
		if x1 < c.Min.X || x0 > c.Max.X {
			continue
		}
		if x1-x0 < vg.Points(1.5) { // a 5 ms stall in a 30 s plot is narrower than a pixel
			x1 = x0 + vg.Points(1.5)
		}
		x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
		c.FillPolygon(b.Color, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		if b.Edge != nil {
			c.StrokeLine2(draw.LineStyle{Color: b.Edge, Width: vg.Points(1.5)}, x0, c.Min.Y, x0, c.Max.Y)
		}
	}
}

// SpanLabels names spans at the top of the plot, each at its start, on a white
// ground, in as many rows as it takes for no two names to overlap.
type SpanLabels struct {
	Spans []Span
	Text  draw.TextStyle
}

// Plot implements plot.Plotter.
func (l SpanLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	st := l.Text
	st.XAlign, st.YAlign = draw.XLeft, draw.YTop
	h := st.Rectangle("Mg").Size().Y
	pad := vg.Points(2)
	var rowsEnd []vg.Length // per row, where its last label ends
	for _, s := range l.Spans {
		if s.Label == "" {
			continue
		}
		x := max(trX(s.From)+pad, c.Min.X+pad)
		w := st.Rectangle(s.Label).Size().X
		if x+w > c.Max.X {
			x = c.Max.X - w - pad
		}
		row := 0
		for row < len(rowsEnd) && rowsEnd[row] > x {
			row++
		}
		if row == len(rowsEnd) {
			rowsEnd = append(rowsEnd, 0)
		}
		rowsEnd[row] = x + w + 2*pad
		y := c.Max.Y - pad - vg.Length(row)*(h+2*pad)
		c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 210}, []vg.Point{{X: x - pad, Y: y + pad}, {X: x + w + pad, Y: y + pad}, {X: x + w + pad, Y: y - h - pad}, {X: x - pad, Y: y - h - pad}})
		c.FillText(st, vg.Point{X: x, Y: y}, s.Label)
	}
}

// Thumbnail implements plot.Thumbnailer.
func (b Bands) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.Color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
	if b.Edge != nil {
		c.StrokeLine2(draw.LineStyle{Color: b.Edge, Width: vg.Points(1.5)}, c.Min.X+vg.Points(2), c.Min.Y, c.Min.X+vg.Points(2), c.Max.Y)
	}
}

// Text is a label at a data point, shifted by DY (up is positive).
type Text struct {
	X, Y float64
	DY   vg.Length
	Text string
}

// Texts draws labels at data points; they have no data range.
type Texts struct {
	Items []Text
	Style draw.TextStyle
}

// Plot implements plot.Plotter.
func (t Texts) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, it := range t.Items {
		pt := vg.Point{X: trX(it.X), Y: trY(it.Y) + it.DY}
		if c.Contains(pt) {
			c.FillText(t.Style, pt, it.Text)
		}
	}
}

// Cross is the paper's value: a large cross.
func Cross(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(6), Shape: thickCross{}}
}

type thickCross struct{}

func (thickCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	ls := draw.LineStyle{Color: sty.Color, Width: vg.Points(2.2)}
	r := sty.Radius * 0.75
	c.StrokeLine2(ls, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(ls, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}

// Oracle colours: the same oracle has the same colour in every figure.
var oracleColors = map[string]color.Color{
	"history":    rgb(0x1f, 0x77, 0xb4),
	"rotating":   rgb(0xff, 0x7f, 0x0e),
	"request":    rgb(0x2c, 0xa0, 0x2c),
	"consensus":  rgb(0xd6, 0x27, 0x28),
	"latency":    rgb(0x94, 0x67, 0xbd),
	"worst-case": rgb(0x8c, 0x56, 0x4b),
	"preference": rgb(0xe3, 0x77, 0xc2),
	"combined":   rgb(0x17, 0xbe, 0xcf),
}

var others = []color.Color{rgb(0x1f, 0x77, 0xb4), rgb(0xff, 0x7f, 0x0e), rgb(0x2c, 0xa0, 0x2c), rgb(0xd6, 0x27, 0x28),
	rgb(0x94, 0x67, 0xbd), rgb(0x8c, 0x56, 0x4b), rgb(0xe3, 0x77, 0xc2), rgb(0x7f, 0x7f, 0x7f), rgb(0xbc, 0xbd, 0x22), rgb(0x17, 0xbe, 0xcf)}

// OracleColor is an oracle's colour; a series that is not an oracle gets the i-th of
// a palette.
func OracleColor(name string, i int) color.Color {
	if c, ok := oracleColors[name]; ok {
		return c
	}
	return others[i%len(others)]
}

// DCColor is a data center's colour (D1, D2, ... and "all"), the same in bars and in
// time series.
func DCColor(dc string, i int) color.Color {
	switch dc {
	case "D1":
		return rgb(0x1b, 0x9e, 0x77)
	case "D2":
		return rgb(0xd9, 0x5f, 0x02)
	case "D3":
		return rgb(0x75, 0x70, 0xb3)
	case "D4":
		return rgb(0xe7, 0x29, 0x8a)
	case "D5":
		return rgb(0x66, 0xa6, 0x1e)
	case "all":
		return color.Gray{Y: 90}
	}
	return others[i%len(others)]
}

// Lighter mixes c with white: f = 0 keeps c, 1 is white.
func Lighter(c color.Color, f float64) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8(float64(v>>8)*(1-f) + 255*f) }
	return color.NRGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

// Alpha is c with an opacity.
func Alpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

func rgb(r, g, b uint8) color.Color { return color.NRGBA{R: r, G: g, B: b, A: 255} }

// NiceTicks labels an axis every 1, 2 or 5 × 10^k units: ten labels at most.
func NiceTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	mag := math.Pow(10, math.Floor(math.Log10((hi-lo)/10)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if (hi-lo)/(m*mag) <= 10 {
			step = m * mag
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+1e-9*step; i++ {
		v := i * step
		if math.Abs(v) < step*1e-9 {
			v = 0 // not "-0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ticks
}

// PercentileTicks label a log axis of 1/(1-q) with percentiles: 0 %, 50 %, 90 %,
// 99 %, 99.9 %, ... up to the axis's end.
func PercentileTicks(lo, hi float64) []plot.Tick {
	ticks := []plot.Tick{{Value: 1, Label: "0%"}, {Value: 2, Label: "50%"}}
	for k := 1; math.Pow(10, float64(k)) <= hi*1.0001; k++ {
		label := strconv.FormatFloat(100-math.Pow(10, 2-float64(k)), 'f', max(0, k-2), 64) + "%"
		ticks = append(ticks, plot.Tick{Value: math.Pow(10, float64(k)), Label: label})
	}
	var out []plot.Tick
	for _, t := range ticks {
		if t.Value >= lo*0.9999 && t.Value <= hi*1.0001 {
			out = append(out, t)
		}
	}
	return out
}

// Whisker is a legend thumbnail of an interval: a vertical line with caps.
type Whisker struct{ Color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (w Whisker) Thumbnail(c *draw.Canvas) {
	ls := draw.LineStyle{Color: w.Color, Width: vg.Points(1.2)}
	x := (c.Min.X + c.Max.X) / 2
	cap := vg.Points(4)
	c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
	c.StrokeLine2(ls, x-cap, c.Min.Y, x+cap, c.Min.Y)
	c.StrokeLine2(ls, x-cap, c.Max.Y, x+cap, c.Max.Y)
}

// Brackets mark spans of the x axis near the bottom of the plot with their names
// (the windows a run's numbers come from).
type Brackets struct {
	Spans []Span
	Color color.Color
	Text  draw.TextStyle
}

// Plot implements plot.Plotter.
func (b Brackets) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	y := c.Min.Y + vg.Points(6)
	ls := draw.LineStyle{Color: b.Color, Width: vg.Points(2.5)}
	for _, s := range b.Spans {
		x0, x1 := max(trX(s.From), c.Min.X), min(trX(s.To), c.Max.X)
		if x1 <= x0 {
			continue
		}
		c.StrokeLine2(ls, x0, y, x1, y)
		c.StrokeLine2(ls, x0, y-vg.Points(3), x0, y+vg.Points(3))
		c.StrokeLine2(ls, x1, y-vg.Points(3), x1, y+vg.Points(3))
		st := b.Text
		st.XAlign, st.YAlign = draw.XCenter, draw.YBottom
		c.FillText(st, vg.Point{X: (x0 + x1) / 2, Y: y + vg.Points(3)}, s.Label)
	}
}
