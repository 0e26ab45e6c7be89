package analysis

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/polebench/polebench/workload"
)

// Each window's model line lies over the stretch its leader led: after a placement
// move, Raft's winner's line ends at the move and the placed leader's starts there.
func TestModelSpan(t *testing.T) {
	s := time.Second
	tests := []struct {
		name     string
		o        PlotOptions
		window   string
		from, to float64
	}{
		{"no crash", PlotOptions{}, "before", 0, 60},
		{"before", PlotOptions{Crash: 30 * s}, "before", 0, 30},
		{"after, nothing moved", PlotOptions{Crash: 30 * s}, "after", 30, 60},
		{"after, until the move", PlotOptions{Crash: 30 * s, Moved: 33 * s}, "after", 30, 33},
		{"placed", PlotOptions{Crash: 30 * s, Moved: 33 * s}, "placed", 33, 60},
	}
	for _, tc := range tests {
		if from, to := tc.o.modelSpan(tc.window, 60); from != tc.from || to != tc.to {
			t.Errorf("%s: %s drawn %g-%g s, want %g-%g", tc.name, tc.window, from, to, tc.from, tc.to)
		}
	}
}

// placedRun is synthetic's run with a placement controller that moved the leader from
// Raft's winner p4 to p1 at 33 s, after which D1 and D2 are served at 10 and 20 ms.
func placedRun() Input {
	recs := synthetic()
	for i := range recs {
		r := &recs[i]
		if r.Intended >= 33500*time.Millisecond && r.Outcome == workload.OK {
			r.Done = r.Intended + map[string]time.Duration{"D1": 10, "D2": 20}[r.DC]*time.Millisecond
		}
	}
	ev := syntheticEvents()
	ev.Placed = Placed{Leader: 1, Moved: 33 * time.Second, Commit: 33300 * time.Millisecond}
	return Input{Records: recs, Events: ev, Model: map[string]map[string]float64{
		"before": {"D1": 10.4, "D2": 20.8}, "after": {"D1": 31.1, "D2": 41.5}, "placed": {"D1": 10.4, "D2": 20.8}}}
}

// A run whose controller moved the leader shows it: latency.png has the move as a
// line at its instant, and the plot names the placed window beside before and after.
func TestPlotPlacedWindow(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("POLEBENCH_PLOT_DIR"); d != "" {
		dir = d // keep the figure to look at it
	}
	in := placedRun()
	if _, _, err := Report(dir, in, 250*time.Millisecond, PlotOptions{Title: "two DCs, the leader placed on p1 at 33 s", YMaxMS: 100, WidthPx: 1000, HeightPx: 500}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "latency.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The move's line is the one column of placedColor over most of the height, at
	// 33 s of the 60 s axis.
	var cols []int
	for x := range img.Bounds().Dx() {
		n := 0
		for y := range img.Bounds().Dy() {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 < 40 && g>>8 > 90 && g>>8 < 150 && b>>8 < 90 {
				n++
			}
		}
		if n > 150 && (len(cols) == 0 || x > cols[len(cols)-1]+3) {
			cols = append(cols, x)
		}
	}
	if len(cols) != 1 || cols[0] < 500 || cols[0] > 600 {
		t.Errorf("the move's line at columns %v, want one near 33 s of 60 (about x=550)", cols)
	}

	windows, err := in.Events.Windows(DefaultSettle, 0)
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	path := filepath.Join(dir, "latency.svg")
	o := PlotOptions{Crash: in.Events.Crash, Moved: in.Events.Placed.Moved, PlacedLeader: 1, Model: in.Model, Windows: windows}
	if err := PlotTimeSeries(mustSeries(t, in.Records), o, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	svg.Write(b)
	// The after window (31.2-33 s) is too narrow for its name; before and placed are named.
	for _, want := range []string{"before window", "placed window", "leader placed on p1"} {
		if !bytes.Contains(svg.Bytes(), []byte(want)) {
			t.Errorf("latency.svg does not say %q", want)
		}
	}
	if bytes.Contains(svg.Bytes(), []byte("after window")) {
		t.Error("latency.svg names the 1.8 s after window, too narrow for its name")
	}
}

func mustSeries(t *testing.T, recs []workload.Record) *Series {
	t.Helper()
	s, err := TimeSeries(recs, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
