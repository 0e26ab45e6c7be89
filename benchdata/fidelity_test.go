package benchdata

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestFidelityJudge computes verdicts on hand-made nights.
func TestFidelityJudge(t *testing.T) {
	mm := func(name string, xs ...float64) Metric { return latency(name, xs) }
	within1 := Goal{MeasuredMinusModelMS: &Range{Min: -1, Max: 1}}
	bench := func(set, flavor string, xs ...float64) Metric {
		return Metric{Name: "b/" + set + "/" + flavor + ".writes_per_s", Unit: "writes/s", Better: Higher, Samples: xs}
	}
	tests := []struct {
		name    string
		goal    Goal
		night   *File
		entry   string
		verdict string
		// deciding: the What of the checks that decided, in order.
		deciding []string
		checks   int
	}{
		{"met: the tightest median decides", within1, fileOf(
			mm("e/measured_minus_model.before.D1", 0.7, 0.9, 0.8, 3.0, 0.75), // one bad repetition: the median is 0.8
			mm("e/measured_minus_model.before.D2", 0.5, 0.6, 0.55),
			mm("e/measured_minus_model.after.D1", 0.9, 0.95, 0.92),
			mm("e/measured_minus_model.after.all", 5, 5, 5), // "all" is not a DC: not checked
			mm("e/latency.mean.after.D1", 42, 42, 42),
			mm("other/measured_minus_model.after.D1", 9, 9, 9),
		), "e", FidelityMet, []string{"measured_minus_model.after.D1"}, 3},
		{"missed above", within1, fileOf(
			mm("e/measured_minus_model.before.D1", 1.2, 1.3, 1.1),
			mm("e/measured_minus_model.before.D2", 0.5, 0.6, 0.55),
		), "e", FidelityMissed, []string{"measured_minus_model.before.D1"}, 2},
		{"missed below: links shorter than the plan", Goal{MeasuredMinusModelMS: &Range{Min: -0.5, Max: 3}}, fileOf(
			mm("e/measured_minus_model.before.D1", -0.9, -0.8, -1),
		), "e", FidelityMissed, []string{"measured_minus_model.before.D1"}, 1},
		{"no data: the entry measured nothing", within1, fileOf(mm("other/measured_minus_model.before.D1", 0.1)), "e", FidelityNoData, nil, 0},
		{"no goal", Goal{}, fileOf(mm("e/measured_minus_model.before.D1", 0.1)), "e", FidelityNoGoal, nil, 0},
		{"bench met", Goal{ThroughputRatioMin: ptr(1.0), NoTrend: true}, fileOf(
			bench("bench-closed-3srv-fsync-off", "poled", 21000, 21500, 20900, 21300, 21100),
			bench("bench-closed-3srv-fsync-off", "zookeeper", 13800, 13700, 14000, 13600, 13900),
			bench("bench-closed-3srv-fsync-on", "poled", 10300, 10400, 10200, 10350, 10250),
			bench("bench-closed-3srv-fsync-on", "zookeeper", 9500, 9400, 9450, 9550, 9420),
			Metric{Name: "b/bench-closed-3srv-fsync-on/poled.p50_ms", Unit: "ms", Samples: []float64{1, 2, 3, 4, 5}},
		), "b", FidelityMet, []string{"bench-closed-3srv-fsync-on: poled/zookeeper writes/s", "bench-closed-3srv-fsync-on: poled writes/s over the windows: Sen's slope -19 writes/s/window (-0.2%)"}, 6},
		// ZooKeeper still warming up: its windows rise every time.
		{"bench: trend", Goal{ThroughputRatioMin: ptr(1.0), NoTrend: true}, fileOf(
			bench("s", "poled", 21000, 21500, 20900, 21300, 21100),
			bench("s", "zookeeper", 9000, 10000, 11000, 12000, 13000),
		), "b", FidelityMissed, []string{"s: zookeeper writes/s over the windows: Sen's slope +1000 writes/s/window (+9.1%)"}, 3},
		{"bench: ratio", Goal{ThroughputRatioMin: ptr(1.2)}, fileOf(
			bench("s", "poled", 10000, 10100, 9900),
			bench("s", "zookeeper", 9500, 9400, 9600),
		), "b", FidelityMissed, []string{"s: poled/zookeeper writes/s"}, 1},
		{"bench: one flavor's windows only", Goal{ThroughputRatioMin: ptr(1.2)}, fileOf(bench("s", "poled", 10000)), "b", FidelityNoData, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fd := tc.goal.Judge(tc.night, tc.entry)
			var deciding []string
			for _, c := range fd.Deciding() {
				deciding = append(deciding, c.What)
			}
			if fd.Verdict != tc.verdict || !reflect.DeepEqual(deciding, tc.deciding) || len(fd.Checks) != tc.checks || fd.Host.Verdict != HostNotMeasured {
				t.Errorf("verdict %s, deciding %q, %d checks, host %q\nwant %s, %q, %d checks\n%+v", fd.Verdict, deciding, len(fd.Checks), fd.Host.Verdict,
					tc.verdict, tc.deciding, tc.checks, fd.Checks)
			}
		})
	}
}

// TestFidelityRoundTripAndOutput: verdicts survive bench.json, and the tables say
// what decided them.
func TestFidelityRoundTripAndOutput(t *testing.T) {
	f := fileOf(latency("e/measured_minus_model.before.D1", []float64{1.2, 1.3, 1.1}))
	g := Goal{MeasuredMinusModelMS: &Range{Min: -1, Max: 1}}
	fd := g.Judge(f, "e")
	fd.Backend = "docker"
	f.Fidelity = []Fidelity{fd, {Entry: "gone", Goal: g, Verdict: FidelityNoData, Note: "the entry failed: docker backend: no engine", Host: HostVerdict{Verdict: HostNotMeasured}}}
	path := filepath.Join(t.TempDir(), FileName)
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil || !reflect.DeepEqual(back.Fidelity, f.Fidelity) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, back.Fidelity, f.Fidelity)
	}
	var text, md bytes.Buffer
	if err := WriteFidelityText(&text, f.Fidelity); err != nil {
		t.Fatal(err)
	}
	if err := WriteFidelityMarkdown(&md, f.Fidelity, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"e docker MISSED measured−model in [-1, +1] ms measured_minus_model.before.D1 +1.20 ms (in [-1, +1]) not measured",
		"gone - no data measured−model in [-1, +1] ms the entry failed: docker backend: no engine not measured",
	} {
		if !strings.Contains(squash(text.String()), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{
		"| `e` | docker | **MISSED** | measured−model in [-1, +1] ms | measured_minus_model.before.D1 +1.20 ms (in [-1, +1]) | not measured |",
		"| measured_minus_model.before.D1 | +1.20 ms | in [-1, +1] | **no** |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if got := FidelityMisses(f.Fidelity); !reflect.DeepEqual(got, []string{"e"}) {
		t.Errorf("misses %v", got)
	}
}

// TestReadFormat1WithoutFidelity: a bench.json written before verdicts existed reads.
func TestReadFormat1WithoutFidelity(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	old := `{"format": 1, "environment": {"date": "2026-11-01T02:17:00Z", "commit": "abc"},
  "metrics": [{"name": "two-dc-crash/election_ms", "unit": "ms", "better": "lower", "min_effect": {"abs": 50, "rel": 0.1}, "samples": [240, 250]}]}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil || len(f.Metrics) != 1 || f.Metrics[0].Deterministic || f.Fidelity != nil || f.Env.Planted != nil {
		t.Errorf("%+v %v", f, err)
	}
}
