package benchdata

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
)

func TestChangePoints(t *testing.T) {
	eff := MinEffect{Abs: 1, Rel: 0.05}
	level := func(r *rand.Rand, means ...float64) [][]float64 {
		var out [][]float64
		for _, m := range means {
			out = append(out, normal(r, 5, m, 0.3))
		}
		return out
	}
	rep := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tests := []struct {
		name  string
		means []float64
		want  []int
	}{
		{"flat", rep(21, 20), nil},
		{"one step up", append(rep(21, 10), rep(24, 10)...), []int{10}},
		{"up then back", append(append(rep(21, 8), rep(24, 6)...), rep(21, 8)...), []int{8, 14}},
		// A step of 0.5 ms is below the 1 ms minimum effect: no change point.
		{"small step", append(rep(21, 10), rep(21.5, 10)...), nil},
		{"too short", []float64{21, 24, 21}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ChangePoints(level(rand.New(rand.NewPCG(5, 6)), tc.means...), eff)
			if !slices.Equal(got, tc.want) {
				t.Errorf("change points %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHistoryRoundTripBaselineAndPlot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "history.jsonl")
	if _, err := ReadHistory(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing history: %v, want ErrNotExist", err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	day := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	for i := range 12 {
		mean := 21.0
		if i >= 6 {
			mean = 25
		}
		f := fileOf(latency("two-dc/latency.mean.before.D1", normal(r, 5, mean, 0.3)), latency("two-dc/"+LostWritesKey, []float64{0, 0, 0, 0, 0}))
		f.Env = Env{Date: day.AddDate(0, 0, i), Commit: "abc"}
		if err := AppendHistory(path, f); err != nil {
			t.Fatal(err)
		}
	}
	nights, err := ReadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(nights) != 12 || nights[11].Commit != "abc" || len(nights[0].Metrics["two-dc/latency.mean.before.D1"].Samples) != 5 {
		t.Fatalf("read back %d nights: %+v", len(nights), nights[0])
	}
	base, err := Baseline(nights, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := base.Metric("two-dc/latency.mean.before.D1")
	if len(m.Samples) != 15 || m.Median() < 24 {
		t.Errorf("baseline of 3 nights: %d samples, median %v", len(m.Samples), m.Median())
	}
	if _, err := Baseline(nil, 3); !errors.Is(err, ErrNoBaseline) {
		t.Errorf("empty history: %v", err)
	}
	files, err := PlotHistory(nights, filepath.Join(dir, "plots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || filepath.Base(files[0]) != "two-dc_latency.mean.before.D1.png" {
		t.Fatalf("plots %v", files)
	}
	if st, err := os.Stat(files[0]); err != nil || st.Size() < 1000 {
		t.Errorf("plot %s: %v", files[0], err)
	}

	// A damaged line is an error naming the file and line.
	if err := os.WriteFile(path, []byte(`{"date":"2026-11-01T00:00:00Z","metrics":{}}`+"\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHistory(path); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("damaged history: %v, want %s:2", err, path)
	}
}

// TestCollect reads a run directory the way the runner leaves it.
func TestCollect(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "two-dc-crash")
	write := func(path, text string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(run, "spec.resolved.json"), `{"Name": "two-dc", "Repetitions": 3}`)
	for i, mean := range []float64{21, 22} {
		rep := filepath.Join(run, "rep"+string(rune('1'+i)))
		write(filepath.Join(rep, "servers.json"), `{"links": "user-space"}`)
		model, el := 20.85, 150.0+float64(i)
		s := &analysis.Summary{ElectionMS: &el, LostAcknowledgedWrites: i, AchievedRate: 999,
			LatencyMS: map[string]map[string]analysis.LatencyStats{"before": {"D1": {Count: 10, Mean: mean, P99: 30, ModelMS: &model}}}}
		if err := s.WriteFile(filepath.Join(rep, "summary.json")); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(run, "rep3"), 0o755) // a repetition that failed before its analysis

	f, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range f.Metrics {
		names = append(names, m.Name)
	}
	want := []string{"two-dc-crash/election_ms", "two-dc-crash/latency.mean.before.D1", "two-dc-crash/latency.p99.before.D1",
		"two-dc-crash/lost_acknowledged_writes", "two-dc-crash/measured_minus_model.before.D1", "two-dc-crash/send_lag_p99_ms", "two-dc-crash/writes_per_s"}
	if !slices.Equal(names, want) {
		t.Fatalf("metrics %v\nwant %v", names, want)
	}
	mm, _ := f.Metric("two-dc-crash/measured_minus_model.before.D1")
	if mm.Unit != "ms" || mm.Better != Lower || len(mm.Samples) != 2 || abs(mm.Samples[1]-1.15) > 1e-9 {
		t.Errorf("measured minus model %+v", mm)
	}
	if !slices.Equal(f.Env.Links, []string{"user-space"}) || len(f.Incomplete) != 1 || !strings.Contains(f.Incomplete[0], "2 of 3") {
		t.Errorf("links %v, incomplete %v", f.Env.Links, f.Incomplete)
	}
	// Judged by another model (a planted night's suite spec): rep1's mean against 19.85,
	// rep2 against none (no window of it), so one sample.
	byRep := map[string]map[string]map[string]float64{"rep1": {"before": {"D1": 19.85}}, "rep2": {"after": {"D1": 1}}}
	w, err := CollectWith(root, func(rd string) (map[string]map[string]float64, error) { return byRep[filepath.Base(rd)], nil })
	if err != nil {
		t.Fatal(err)
	}
	if mm, _ := w.Metric("two-dc-crash/measured_minus_model.before.D1"); len(mm.Samples) != 1 || abs(mm.Samples[0]-1.15) > 1e-9 {
		t.Errorf("measured minus another model %+v", mm)
	}
	if lm, _ := w.Metric("two-dc-crash/latency.mean.before.D1"); len(lm.Samples) != 2 {
		t.Errorf("another model changed the means: %+v", lm)
	}
	// The run directory itself is named by its spec.
	g, err := Load(run)
	if err != nil || g.Metrics[0].Name != "two-dc/election_ms" {
		t.Fatalf("run directory: %v %v", err, g)
	}
	// A bench.json written and read back is the same.
	p := filepath.Join(root, FileName)
	if err := f.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	h, err := Load(root)
	if err != nil || len(h.Metrics) != len(f.Metrics) || h.Metrics[1].Samples[1] != 22 {
		t.Fatalf("bench.json round trip: %v %+v", err, h)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no run directory") {
		t.Errorf("empty directory: %v", err)
	}
}

// TestCollectSimulated: a simulated run's metrics are marked deterministic.
func TestCollectSimulated(t *testing.T) {
	root := t.TempDir()
	for name, backend := range map[string]string{"sim-two-dc": "sim", "two-dc": "local"} {
		run := filepath.Join(root, name)
		os.MkdirAll(run, 0o755)
		if err := os.WriteFile(filepath.Join(run, "spec.resolved.json"), []byte(`{"Name": "two-dc", "Repetitions": 1, "Backend": "`+backend+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		el := 250.0
		if err := (&analysis.Summary{ElectionMS: &el}).WriteFile(filepath.Join(run, "summary.json")); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Metrics {
		if m.Deterministic != strings.HasPrefix(m.Name, "sim-") {
			t.Errorf("%s: deterministic %v", m.Name, m.Deterministic)
		}
	}
}

// TestBaselineSimulatedAndComparable: a simulated metric's baseline is the last
// night's samples, not the pool; planted nights, nights of the other length (--quick)
// and of another suite are left out.
func TestBaselineSimulatedAndComparable(t *testing.T) {
	day := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	var nights []Night
	for i, env := range []Env{
		{Suite: "default"},
		{Suite: "default", Planted: []string{"intra-dc-rtt=3"}},
		{Suite: "default", Quick: true},
		{Suite: "other"},
		{}, // before nights named their suite
		{Suite: "default"},
	} {
		sim := latency("sim/latency.mean.before.D1", []float64{21 + float64(i), 21 + float64(i)})
		sim.Deterministic = true
		f := fileOf(sim, latency("real/latency.mean.before.D1", []float64{21, 21.1}))
		env.Date, env.Commit = day.AddDate(0, 0, i), fmt.Sprint("c", i)
		f.Env = env
		nights = append(nights, NightOf(f))
	}
	kept, skipped := Comparable(nights, Env{Suite: "default"})
	if len(kept) != 3 || skipped != 3 || kept[0].Commit != "c0" || kept[1].Commit != "c4" || kept[2].Commit != "c5" {
		t.Fatalf("kept %d (skipped %d): %+v", len(kept), skipped, kept)
	}
	if q, _ := Comparable(nights, Env{Suite: "default", Quick: true}); len(q) != 1 || q[0].Commit != "c2" {
		t.Errorf("quick nights: %+v", q)
	}
	base, err := Baseline(kept, 5)
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := base.Metric("sim/latency.mean.before.D1")
	pooled, _ := base.Metric("real/latency.mean.before.D1")
	if !sim.Deterministic || !slices.Equal(sim.Samples, []float64{26, 26}) || len(pooled.Samples) != 6 || base.Env.Commit != "c5" {
		t.Errorf("baseline: sim %+v, real %+v, env %+v", sim, pooled, base.Env)
	}
}
