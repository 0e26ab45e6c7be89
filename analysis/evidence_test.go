package analysis

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
)

// faultTimeline is a recovery run's harness records: p1 killed at 4 s, restarted cut off
// at 14 s and rejoined at the crash of p5 at 15 s, p4 committing first at 15.5 s; a
// partition from 20 to 22 s, a pause of p2 from 24 to 25 s, and a fault kind no code
// knows at 26 s.
func faultTimeline() []record.Record {
	h := func(at float64, kind event.Kind, server int, fault nemesis.Kind) record.Record {
		r := record.Harness(time.Duration(at*float64(time.Second)), kind, server, nil)
		r.Fault = fault
		return r
	}
	node := func(at float64, kind event.Kind, server int) record.Record {
		return record.Record{AtMS: at * 1000, Event: event.Event{Kind: kind, Server: server}, Source: record.SourceNode}
	}
	return []record.Record{
		h(0, event.LoadStart, 0, ""),
		h(4, event.Kill, 1, nemesis.Kill),
		h(14, event.Partition, 1, nemesis.Outdate),
		h(14, event.Restart, 1, nemesis.Restart),
		h(15, event.Kill, 5, nemesis.Crash),
		h(15, event.Heal, 1, nemesis.Rejoin),
		node(15.3, event.Leading, 4),
		node(15.5, event.FirstCommit, 4),
		h(20, event.Partition, 0, nemesis.Partition),
		h(22, event.Heal, 0, nemesis.Heal),
		h(24, "PAUSE", 2, "pause"),
		h(25, "RESUME", 2, "resume"),
		h(26, event.Kill, 3, "clock-skew"), // a stop of a kind this code does not know: down until a restart that never comes
		h(30, event.LoadEnd, 0, ""),
	}
}

func TestFaults(t *testing.T) {
	got := Faults(faultTimeline(), 30*time.Second)
	type span struct {
		kind     string
		server   int
		from, to float64
		label    string
	}
	want := []span{
		{FaultDown, 1, 4, 14, "p1 down"},
		{FaultCut, 1, 14, 15, "p1 outdated: cut off"},
		{FaultCrash, 5, 15, 15.5, "p5 crashed; p4 leads from 15.50 s"},
		{FaultCut, 0, 20, 22, "partition"},
		{FaultPause, 2, 24, 25, "p2 paused"},
		{FaultDown, 3, 26, 30, "p3 down"},
	}
	if len(got) != len(want) {
		t.Fatalf("faults %+v, want %+v", got, want)
	}
	for i, f := range got {
		g := span{f.Kind, f.Server, f.From.Seconds(), f.To.Seconds(), f.Label}
		if g != want[i] {
			t.Errorf("fault %d: %+v, want %+v", i, g, want[i])
		}
	}
}

func writeRun(t *testing.T, dir string, withStall bool) {
	t.Helper()
	var recs []record.Record = faultTimeline()
	if err := record.WriteEvents(filepath.Join(dir, "events.jsonl"), recs); err != nil {
		t.Fatal(err)
	}
	s := &Series{Bucket: 250 * time.Millisecond, DCs: []string{"D1", "D2"}, Points: map[string][]Point{}}
	for i := range 120 {
		tt := (float64(i) + 0.5) * 0.25
		for dc, v := range map[string]float64{"D1": 20, "D2": 40} {
			if tt > 15 && tt < 15.5 {
				v = 600 // the crash's spike
			}
			s.Points[dc] = append(s.Points[dc], Point{T: tt, MeanMS: v, Count: 100})
		}
	}
	f, err := os.Create(filepath.Join(dir, "timeseries.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteCSV(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	m1, m2 := 20.0, 41.0
	sum := &Summary{NewLeader: 4, LatencyMS: map[string]map[string]LatencyStats{
		"before": {"D1": {Mean: 20, ModelMS: &m1}, "D2": {Mean: 40, ModelMS: &m2}},
		"after":  {"D1": {Mean: 20, ModelMS: &m1}, "D2": {Mean: 40, ModelMS: &m2}}}}
	sum.Windows.Before, sum.Windows.After = &Span{From: 5, To: 15}, &Span{From: 25.5, To: 30}
	if err := sum.WriteFile(filepath.Join(dir, "summary.json")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []Window{{Name: "before", From: 5 * time.Second, To: 15 * time.Second}, {Name: "after", From: 25 * time.Second, To: 30 * time.Second}} {
		for dc, base := range map[string]int64{"D1": 20e6, "D2": 40e6} {
			h := hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits)
			for i := range int64(1000) {
				h.RecordValue(base + i*1000) // 20 to 21 ms
			}
			if err := writeHistogram(filepath.Join(dir, "hdr-"+w.Name+"-"+dc+".hlog"), h, w, dc); err != nil {
				t.Fatal(err)
			}
		}
	}
	if withStall {
		if err := os.WriteFile(filepath.Join(dir, "hiccups.csv"), []byte("process,start_ms,length_ms\nharness,23000,400\nharness,28000,2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlotRunTimelineShadesEveryFault reads a run directory back and looks at the
// figure as a reader would: along a row of pixels above the data, the shades of the
// faults and the host's stall, each as wide as it lasted.
func TestPlotRunTimelineShadesEveryFault(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, true)
	rd, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rd.HostMeasured || len(rd.Stalls) != 2 || len(rd.Histograms["after"]) != 2 || rd.Series.Bucket != 250*time.Millisecond {
		t.Fatalf("read back: host %v, %d stalls, %d histograms after, bucket %v", rd.HostMeasured, len(rd.Stalls), len(rd.Histograms["after"]), rd.Series.Bucket)
	}
	tl, err := PlotRunTimeline(rd, "one run", filepath.Join(dir, "tl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tl.Note, "the crash's spike peaks at 600 ms") || len(tl.Faults) != 6 {
		t.Errorf("note %q, faults %q", tl.Note, tl.Faults)
	}
	img := decodePNG(t, tl.PNG)
	// Blends of each shade over white, as drawn.
	over := func(r, g, b, a float64) [3]float64 {
		f := a / 255
		return [3]float64{r*f + 255*(1-f), g*f + 255*(1-f), b*f + 255*(1-f)}
	}
	shades := map[string][3]float64{
		"down":  over(90, 90, 90, 55),
		"cut":   over(120, 70, 200, 55),
		"crash": over(230, 60, 60, 45),
		"pause": over(230, 180, 0, 70),
		"stall": over(float64(evidenceStall.R), float64(evidenceStall.G), float64(evidenceStall.B), float64(evidenceStall.A)),
	}
	b := img.Bounds()
	y := b.Min.Y + b.Dy()*40/100 // above the lines (20 and 40 ms of a 123 ms axis), below the labels
	count := map[string]int{}
	for x := b.Min.X; x < b.Max.X; x++ {
		r, g, bl, _ := img.At(x, y).RGBA()
		for name, c := range shades {
			if within4(float64(r>>8), c[0]) && within4(float64(g>>8), c[1]) && within4(float64(bl>>8), c[2]) {
				count[name]++
			}
		}
	}
	// 10 + 4 s down, 1 s + 2 s cut, 0.5 s crash (its start a black line), 1 s pause, a
	// 0.4 s stall (the 2 ms one is under the meter's threshold).
	perSec := float64(count["down"]) / 14
	for name, secs := range map[string]float64{"cut": 3, "crash": 0.5, "pause": 1, "stall": 0.4} {
		if got := float64(count[name]) / perSec; got < secs*0.6 || got > secs*1.3+0.1 {
			t.Errorf("%s shaded over %.2f s of the row, want %.1f (%v px, %.1f px/s)", name, got, secs, count, perSec)
		}
	}
	if perSec < 10 {
		t.Errorf("down shaded over %d px: too few to measure the others (%v)", count["down"], count)
	}
}

func within4(a, b float64) bool { return a-b < 4 && b-a < 4 }

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestPlotRunPercentiles(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, false)
	rd, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rd.HostMeasured {
		t.Error("a run without hiccups.csv read as measuring its host")
	}
	saved, err := PlotRunPercentiles(rd, "percentiles", filepath.Join(dir, "pct"))
	if err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(saved.SVG)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"99.9%", "D1 (1000 before, 1000 after)", "after the crash", "log scale of 1/(1-p)"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the percentile figure does not say %q", want)
		}
	}
	if xs := percentileXs(1000); xs[0] != 1 || xs[len(xs)-1] != 1000 {
		t.Errorf("percentiles drawn from 1/(1-p) = %v to %v, want 1 to 1000", xs[0], xs[len(xs)-1])
	}
	rd.Histograms = nil
	if _, err := PlotRunPercentiles(rd, "none", filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "hdr-<window>-<dc>.hlog") {
		t.Errorf("no HDR logs: %v", err)
	}
}

func TestReadRunErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadRun(dir); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("an empty directory: %v", err)
	}
	writeRun(t, dir, false)
	os.WriteFile(filepath.Join(dir, "timeseries.csv"), []byte("dc,t_s,mean_ms,ok,failed,unknown\nD1,0.25,abc,1,0,0\n"), 0o644)
	if _, err := ReadRun(dir); err == nil || !strings.Contains(err.Error(), "timeseries.csv:2: mean_ms") {
		t.Errorf("a bad number: %v", err)
	}
	writeRun(t, dir, false)
	os.WriteFile(filepath.Join(dir, "hiccups.csv"), []byte("who,when\n"), 0o644)
	if _, err := ReadRun(dir); err == nil || !strings.Contains(err.Error(), "hiccups.csv: want the header") {
		t.Errorf("a bad hiccups.csv: %v", err)
	}
}
