package analysis

import (
	"bytes"
	"encoding/json"
	"flag"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/polebench/polebench/figure"
	"github.com/polebench/polebench/workload"
)

var update = flag.Bool("update", false, "rewrite golden files")

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestQuantileNearestRank(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(i + 1) // 1..100
	}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.5, 50}, {0.99, 99}, {0.995, 100}, {1, 100}} {
		if got := Quantile(xs, tc.q); got != tc.want {
			t.Errorf("Quantile(1..100, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := Quantile([]float64{7}, 0.99); got != 7 {
		t.Errorf("single value: %v", got)
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("quantile of nothing is not NaN")
	}
}

func TestTQuantileMatchesTables(t *testing.T) {
	// Two-sided 95 % critical values (p = 0.975) and one 90 % one, from standard t tables.
	for _, tc := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.7062047}, {0.975, 2, 4.30265273}, {0.975, 4, 2.77644511},
		{0.975, 9, 2.26215716}, {0.975, 29, 2.04522964}, {0.95, 4, 2.13184679},
	} {
		if got := TQuantile(tc.p, tc.df); !near(got, tc.want, 1e-6) {
			t.Errorf("t(%v, df=%v) = %.8f, want %.8f", tc.p, tc.df, got, tc.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	a, err := Aggregate([]float64{10, 12, 11, 13, 9})
	if err != nil {
		t.Fatal(err)
	}
	// sd = sqrt(10/4); half width = t(0.975, 4) * sd / sqrt(5) = 2.7764451 * 0.7071068.
	if a.N != 5 || a.Mean != 11 || a.Median != 11 || a.Min != 9 || a.Max != 13 || !near(a.SD, math.Sqrt(2.5), 1e-12) {
		t.Errorf("aggregate %+v", a)
	}
	if a.CI95 == nil || !near(a.CI95.HalfWidth, 1.9632432, 1e-6) || !near(a.CI95.Low, 11-1.9632432, 1e-6) || !near(a.CI95.High, 11+1.9632432, 1e-6) {
		t.Errorf("ci95 %+v, want 11 ± 1.9632432", a.CI95)
	}
	if a, _ := Aggregate([]float64{4, 1}); a.Median != 2.5 || a.Mean != 2.5 {
		t.Errorf("even count: median %v mean %v", a.Median, a.Mean)
	}
	if a, err := Aggregate([]float64{3}); err != nil || a.CI95 != nil || a.SD != 0 || a.Mean != 3 {
		t.Errorf("one value: %+v %v; want no interval", a, err)
	}
	for _, bad := range [][]float64{nil, {1, math.NaN()}, {math.Inf(1)}} {
		if _, err := Aggregate(bad); err == nil {
			t.Errorf("Aggregate(%v) succeeded", bad)
		}
	}
}

func TestWindows(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		e    Events
		want []Window
		err  string
	}{
		{name: "no crash", e: Events{WarmupEnd: 5 * s, End: 60 * s}, want: []Window{{"before", 5 * s, 60 * s}}},
		{name: "crash and election", e: Events{WarmupEnd: 5 * s, Crash: 60 * s, Elected: 61 * s, End: 120 * s},
			want: []Window{{"before", 5 * s, 60 * s}, {"after", 71 * s, 120 * s}}},
		{name: "leading stands in for elected", e: Events{WarmupEnd: 5 * s, Crash: 60 * s, Leading: 62 * s, End: 120 * s},
			want: []Window{{"before", 5 * s, 60 * s}, {"after", 72 * s, 120 * s}}},
		{name: "never re-elected", e: Events{Crash: 60 * s, End: 120 * s}, want: []Window{{"before", 0, 60 * s}}},
		{name: "elected too late to settle", e: Events{Crash: 60 * s, Elected: 115 * s, End: 120 * s}, want: []Window{{"before", 0, 60 * s}}},
		{name: "crash before warm-up", e: Events{WarmupEnd: 10 * s, Crash: 5 * s, End: 120 * s}, err: "not after the warm-up"},
		{name: "elected before crash", e: Events{Crash: 60 * s, Elected: 50 * s, End: 120 * s}, err: "before the crash"},
		{name: "warm-up past end", e: Events{WarmupEnd: 130 * s, End: 120 * s}, err: "warm-up"},
	} {
		got, err := tc.e.Windows(DefaultSettle, 0)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: window %d = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

// synthetic is a 60 s run at 100 req/s per DC: before the crash at 30 s D1 sees
// 10..14 ms and D2 20..26 ms; requests intended in [30 s, 31.5 s) wait for the election
// (some fail or end unknown); afterwards D1 sees 30..32 ms and D2 40 ms.
func synthetic() []workload.Record {
	var recs []workload.Record
	ms := time.Millisecond
	id := uint64(0)
	for i := 0; i < 6000; i++ {
		at := time.Duration(i) * 10 * ms
		for _, dc := range []string{"D1", "D2"} {
			id++
			r := workload.Record{ID: id, DC: dc, Server: 1, Key: "/polebench/k00000", Intended: at, Sent: at + 100*time.Microsecond,
				Outcome: workload.OK, Zxid: int64(id), Version: 1, Attempts: 1}
			var lat time.Duration
			switch {
			case at < 30*time.Second && dc == "D1":
				lat = time.Duration(10+i%5) * ms
			case at < 30*time.Second:
				lat = time.Duration(20+i%7) * ms
			case at < 31500*ms:
				lat = 31500*ms - at + 40*ms // stalled until the new leader serves
				if dc == "D1" && i%10 == 0 {
					r.Outcome, r.Err = workload.Failed, "no server available"
				}
				if dc == "D2" && i%25 == 0 {
					r.Outcome, r.Err = workload.Unknown, "zk: connection closed"
				}
			case dc == "D1":
				lat = time.Duration(30+i%3) * ms
			default:
				lat = 40 * ms
			}
			r.Done = at + lat
			recs = append(recs, r)
		}
	}
	return recs
}

func syntheticEvents() Events {
	s := time.Second
	return Events{WarmupEnd: 5 * s, Crash: 30 * s, Elected: 31 * s, Leading: 31 * s, FirstCommit: 31*s + 200*time.Millisecond,
		End: 60 * s, InitialLeader: 5, NewLeader: 4}
}

func TestLatencies(t *testing.T) {
	recs := synthetic()
	ws, err := syntheticEvents().Windows(DefaultSettle, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := Latencies(recs, ws[0])
	// [5 s, 30 s): 2500 requests per DC; D1 cycles 10..14 ms evenly, D2 20..26 ms.
	d1, d2, all := before["D1"], before["D2"], before[All]
	if d1.Count != 2500 || d1.Mean != 12 || d1.P50 != 12 || d1.P99 != 14 || d1.Max != 14 || d1.Failed != 0 {
		t.Errorf("before D1 %+v", d1)
	}
	if d2.Count != 2500 || !near(d2.Mean, 23, 0.01) || d2.P50 != 23 || d2.P99 != 26 || d2.Max != 26 {
		t.Errorf("before D2 %+v", d2)
	}
	if all.Count != 5000 || !near(all.Mean, (d1.Mean+d2.Mean)/2, 1e-9) || all.Max != 26 {
		t.Errorf("before all %+v", all)
	}
	after := Latencies(recs, ws[1])
	if a := after["D1"]; a.Count != 1900 || !near(a.Mean, 31, 0.01) || a.Max != 32 {
		t.Errorf("after D1 %+v", a)
	}
	if a := after["D2"]; a.Count != 1900 || a.Mean != 40 || a.P99 != 40 {
		t.Errorf("after D2 %+v", a)
	}
	// The stall is in neither window, but counted in a window that covers it.
	stall := Latencies(recs, Window{"stall", 30 * time.Second, 31500 * time.Millisecond})
	if s := stall["D1"]; s.Failed != 15 || s.Count != 135 || s.Max != 1530 /* 30.00 s failed */ {
		t.Errorf("stall D1 %+v", s)
	}
	if s := stall["D2"]; s.Unknown != 6 || s.Count != 144 {
		t.Errorf("stall D2 %+v", s)
	}
}

func TestTimeSeries(t *testing.T) {
	s, err := TimeSeries(synthetic(), 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.DCs) != 2 || len(s.Points["D1"]) != 120 {
		t.Fatalf("series DCs %v, %d D1 points; want 2 DCs, 120 buckets", s.DCs, len(s.Points["D1"]))
	}
	p0, p60 := s.Points["D1"][0], s.Points["D1"][60]
	if p0.T != 0.25 || p0.Count != 50 || p0.MeanMS != 12 {
		t.Errorf("first D1 bucket %+v", p0)
	}
	// Bucket [30 s, 30.5 s): latencies 1540 ms down to 1050 ms, one in ten failed.
	if p60.T != 30.25 || p60.Failed != 5 || p60.Count != 45 || p60.MeanMS < 1000 {
		t.Errorf("crash bucket %+v", p60)
	}
	var buf bytes.Buffer
	if err := s.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 241 || !strings.HasPrefix(buf.String(), "dc,t_s,mean_ms,ok,failed,unknown\nD1,0.250,12.000,50,0,0\n") {
		t.Errorf("csv: %d lines, starts %q", lines, buf.String()[:80])
	}
	if _, err := TimeSeries(nil, 0); err == nil {
		t.Error("zero bucket accepted")
	}
}

func TestWriteHistograms(t *testing.T) {
	dir := t.TempDir()
	ws, _ := syntheticEvents().Windows(DefaultSettle, 0)
	paths, err := WriteHistograms(dir, synthetic(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 6 {
		t.Fatalf("paths %v, want 2 windows × (D1, D2, all)", paths)
	}
	f, err := os.Open(filepath.Join(dir, "hdr-before-D2.hlog"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := hdrhistogram.NewHistogramLogReader(f).NextIntervalHistogram()
	if err != nil || h == nil {
		t.Fatalf("reading the log back: %v", err)
	}
	if h.TotalCount() != 2500 || !near(float64(h.ValueAtQuantile(99))/1e6, 26, 0.05) || !near(h.Mean()/1e6, 23, 0.05) {
		t.Errorf("histogram count %d p99 %d ns mean %.0f ns", h.TotalCount(), h.ValueAtQuantile(99), h.Mean())
	}
}

func TestSummaryGolden(t *testing.T) {
	s, err := Summarize(Input{
		Records: synthetic(), Events: syntheticEvents(), OfferedRate: 200,
		Model: map[string]map[string]float64{"before": {"D1": 10.4, "D2": 20.8, All: 15.6}, "after": {"D1": 31.1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "summary.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("summary differs from %s (rerun with -update if intended):\n%s", golden, got)
	}
	// Spot checks, so the golden file cannot silently hold nonsense.
	if *s.ElectionMS != 1000 || *s.RecoveryMS != 200 || s.NewLeader != 4 ||
		s.Requests.Failed != 15 || s.Requests.Unknown != 6 || *s.LatencyMS["after"]["D1"].ModelMS != 31.1 ||
		s.LatencyMS["after"]["D2"].ModelMS != nil || s.LatencyMS["before"]["D1"].Mean != 12 {
		t.Errorf("summary spot checks failed: %s", got)
	}
	// Round trip through a file.
	path := filepath.Join(t.TempDir(), "summary.json")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(path)
	if err != nil || *back.ElectionMS != 1000 || back.LatencyMS["before"][All].Count != 5000 {
		t.Errorf("read back: %+v %v", back, err)
	}
}

func TestSummarizeRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"no records", Input{}, "no records"},
		{"model for a missing DC", Input{Records: synthetic(), Events: syntheticEvents(),
			Model: map[string]map[string]float64{"before": {"D9": 1}}}, `"D9"`},
		{"commit before leading", Input{Records: synthetic(), Events: Events{Crash: 30 * time.Second,
			Leading: 31 * time.Second, FirstCommit: 30 * time.Second}}, "first commit"},
	} {
		if _, err := Summarize(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A run too short to settle after the election keeps its summary; the model's
// "after" prediction, with nothing to sit beside, becomes a warning.
func TestSummarizeWarnsOfAMissingWindow(t *testing.T) {
	s, err := Summarize(Input{Records: synthetic(), Events: Events{End: time.Minute},
		Model: map[string]map[string]float64{"after": {"D1": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], `no "after" window`) {
		t.Fatalf("warnings %q", s.Warnings)
	}
}

// A run that did not get the schedule it planned, or whose new leader led twice
// before it served, says so: its recovery time is not what it seems.
func TestSummarizeWarnsOfFailedFaultsAndRepeatedLeading(t *testing.T) {
	ev := syntheticEvents()
	ev.Leadings, ev.FailedFaults = 2, []string{"outdate of p1 at 14.0 s: p5: cut: refused"}
	s, err := Summarize(Input{Records: synthetic(), Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"the nemesis could not carry out the outdate of p1 at 14.0 s: p5: cut: refused",
		"p4 went LEADING 2 times between the crash and its first commit: recovery counts from the last"}
	if !slices.Equal(s.Warnings, want) {
		t.Fatalf("warnings %q, want %q", s.Warnings, want)
	}
}

func TestAggregateRuns(t *testing.T) {
	var sums []*Summary
	for i, shift := range []time.Duration{0, 2 * time.Millisecond, 4 * time.Millisecond} {
		recs := synthetic()
		for j := range recs {
			recs[j].Done += shift
		}
		e := syntheticEvents()
		e.Elected += time.Duration(i) * 100 * time.Millisecond
		s, err := Summarize(Input{Records: recs, Events: e})
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, s)
	}
	r, err := AggregateRuns(sums)
	if err != nil {
		t.Fatal(err)
	}
	// Means 12, 14, 16 ms: mean 14, sd 2, half width t(0.975, 2)·2/√3.
	a := r.MeanLatencyMS["before"]["D1"]
	if a.N != 3 || !near(a.Mean, 14, 1e-9) || a.CI95 == nil || !near(a.CI95.HalfWidth, 4.30265273*2/math.Sqrt(3), 1e-6) {
		t.Errorf("before D1 aggregate %+v", a)
	}
	if r.ElectionMS == nil || !near(r.ElectionMS.Mean, 1100, 1e-9) || r.ElectionMS.Min != 1000 || r.ElectionMS.Max != 1200 {
		t.Errorf("election aggregate %+v", r.ElectionMS)
	}
	if r.N != 3 || r.NewLeaders[4] != 3 || r.P99LatencyMS["after"]["D2"].Mean != 42 {
		t.Errorf("repetitions %+v", r)
	}
	if _, err := AggregateRuns(nil); err == nil {
		t.Error("no summaries accepted")
	}
}

func TestPlotTimeSeries(t *testing.T) {
	s, err := TimeSeries(synthetic(), 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("POLEBENCH_PLOT_DIR"); d != "" {
		dir = d // keep the figure to look at it
	}
	opts := PlotOptions{
		Title: "Two DCs: latency per DC, leader crash at 30 s", Crash: 30 * time.Second, Elected: 31 * time.Second,
		Model:  map[string]map[string]float64{"before": {"D1": 10.4, "D2": 20.8}, "after": {"D1": 31.1, "D2": 41.5}},
		YMaxMS: 100, WidthPx: 1000, HeightPx: 500,
		Stalls: []HostStall{{HarnessProcess, 12 * time.Second, 12200 * time.Millisecond}, {"p2", 45 * time.Second, 45020 * time.Millisecond},
			{HarnessProcess, 20 * time.Second, 20003 * time.Millisecond}}, // the last too short to shade
	}
	pngPath := filepath.Join(dir, "latency.png")
	if err := PlotTimeSeries(s, opts, pngPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1000 || b.Dy() != 500 {
		t.Errorf("png is %dx%d, want 1000x500", b.Dx(), b.Dy())
	}
	// The long stalls are bands over most of the plot's height, one at about 12 s and
	// one at about 45 s of the 60 s axis; the 3 ms one is not drawn.
	var bands []int // the first column of each band
	for x := range 1000 {
		pink := 0
		for y := range 500 {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 > g>>8+30 && b>>8 > g>>8+10 && r > b {
				pink++
			}
		}
		if pink > 250 && (len(bands) == 0 || x > bands[len(bands)-1]+3) {
			bands = append(bands, x)
		}
	}
	if len(bands) != 2 || bands[0] < 150 || bands[0] > 300 || bands[1] < 650 || bands[1] > 850 {
		t.Errorf("shaded columns start at %v, want two bands near 12 s and 45 s of 60", bands)
	}
	svgPath := filepath.Join(dir, "latency.svg")
	if err := PlotTimeSeries(s, opts, svgPath); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(svgPath); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("svg: %v", err)
	}
	if err := PlotTimeSeries(s, opts, filepath.Join(dir, "x.gif")); err == nil {
		t.Error("gif accepted")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 60, "0 10 20 30 40 50 60"},
		{0, 1.3, "0.0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{0, 523, "0 100 200 300 400 500"},
		{3, 3, "3"},
	} {
		var got []string
		for _, tk := range figure.NiceTicks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("figure.NiceTicks(%v, %v) = %v, want %s", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	s, files, err := Report(dir, Input{Records: synthetic(), Events: syntheticEvents(), OfferedRate: 200}, 0,
		PlotOptions{Title: "synthetic", YMaxMS: 100})
	if err != nil {
		t.Fatal(err)
	}
	if s.LatencyMS["before"]["D1"].Count != 2500 || len(files.Histograms) != 6 {
		t.Errorf("summary %+v files %+v", s, files)
	}
	for _, p := range append([]string{files.Summary, files.Series, files.Plot}, files.Histograms...) {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// latenciesReference is Latencies as it was, sorting floats: kept to check that the
// sums and quantiles come out the same.
func latenciesReference(recs []workload.Record, w Window) map[string]LatencyStats {
	samples := map[string][]float64{}
	out := map[string]LatencyStats{}
	for _, r := range recs {
		if !w.contains(r.Intended) {
			continue
		}
		for _, k := range []string{r.DC, All} {
			st := out[k]
			switch r.Outcome {
			case workload.OK:
				samples[k] = append(samples[k], ms(r.Latency()))
			case workload.Failed:
				st.Failed++
			default:
				st.Unknown++
			}
			out[k] = st
		}
	}
	for k, st := range out {
		xs := samples[k]
		slices.Sort(xs)
		st.Count = len(xs)
		if len(xs) > 0 {
			var sum float64
			for _, x := range xs {
				sum += x
			}
			st.Mean, st.P50, st.P99, st.Max = sum/float64(len(xs)), Quantile(xs, 0.5), Quantile(xs, 0.99), xs[len(xs)-1]
		}
		out[k] = st
	}
	return out
}

func TestLatenciesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	dcs := []string{"D1", "D2", "D3", All} // a DC named like All counts twice there, as it did
	var recs []workload.Record
	for i := range 50_000 {
		r := workload.Record{DC: dcs[rng.IntN(len(dcs))], Intended: time.Duration(i) * time.Millisecond, Outcome: workload.OK}
		r.Done = r.Intended + time.Duration(rng.NormFloat64()*3e6+20e6)
		switch rng.IntN(100) {
		case 0:
			r.Outcome = workload.Failed
		case 1:
			r.Outcome = workload.Unknown
		}
		recs = append(recs, r)
	}
	for _, w := range []Window{{"before", 5 * time.Second, 30 * time.Second}, {"after", 40 * time.Second, time.Hour}, {"none", -2, -1}} {
		if got, want := Latencies(recs, w), latenciesReference(recs, w); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v\nreference %+v", w.Name, got, want)
		}
	}
}
