package figure

import (
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TestSpotsLandOnTheirPoints: a spot's place in the saved PNG is where its point was
// drawn (the report's links sit on the points a reader clicks), with a legend beside
// the plot moving the data area.
func TestSpotsLandOnTheirPoints(t *testing.T) {
	p := New("spots", "x (s)", "y (ms)")
	pts := plotter.XYs{{X: 1, Y: 10}, {X: 4, Y: 35}, {X: 9, Y: 80}}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		t.Fatal(err)
	}
	red := color.NRGBA{R: 255, A: 255}
	sc.GlyphStyle = draw.GlyphStyle{Color: red, Radius: vg.Points(5), Shape: draw.CircleGlyph{}}
	p.Add(sc)
	spots := &Spots{}
	for _, pt := range pts {
		spots.Add(pt.X, pt.Y, "runs/x", "a point")
	}
	p.Add(spots)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 10, 0, 100
	leg := NewLegend()
	leg.Add("a rather long legend entry that takes room", sc)
	base := filepath.Join(t.TempDir(), "spots")
	saved, err := Save(p, leg, Width, Height, base, spots)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Spots) != 3 {
		t.Fatalf("%d spots placed, want 3", len(saved.Spots))
	}
	f, err := os.Open(saved.PNG)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if want := int(Width / vg.Inch * DPI); b.Dx() != want {
		t.Errorf("PNG %d px wide, want %d", b.Dx(), want)
	}
	for i, s := range saved.Spots {
		x, y := int(s.X*float64(b.Dx())), int(s.Y*float64(b.Dy()))
		r, g, bl, _ := img.At(x, y).RGBA()
		if r>>8 < 200 || g>>8 > 60 || bl>>8 > 60 {
			t.Errorf("spot %d at (%d, %d) px is not on its red point: %v", i, x, y, img.At(x, y))
		}
	}
	if !(saved.Spots[0].X < saved.Spots[1].X && saved.Spots[1].Y < saved.Spots[0].Y) {
		t.Errorf("spots out of order: %+v", saved.Spots)
	}
	svg, err := os.ReadFile(saved.SVG)
	if err != nil || !strings.Contains(string(svg), "a rather long legend entry") {
		t.Errorf("SVG without the legend: %v", err)
	}
}

func TestTicks(t *testing.T) {
	var labels []string
	for _, tk := range NiceTicks(-1e-12, 35) {
		labels = append(labels, tk.Label)
	}
	if want := []string{"0", "5", "10", "15", "20", "25", "30", "35"}; !slices.Equal(labels, want) {
		t.Errorf("NiceTicks(~0, 35) = %q, want %q (never -0)", labels, want)
	}
	labels = nil
	for _, tk := range PercentileTicks(1, 2500) {
		labels = append(labels, tk.Label)
	}
	if want := []string{"0%", "50%", "90%", "99%", "99.9%"}; !slices.Equal(labels, want) {
		t.Errorf("PercentileTicks(1, 2500) = %q, want %q", labels, want)
	}
	var _ plot.Ticker = plot.TickerFunc(PercentileTicks)
}
