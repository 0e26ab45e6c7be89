package benchdata

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/polebench/polebench/analysis"
)

func ptr[T any](v T) *T { return &v }

// TestFidelityJudge computes verdicts on hand-made nights: a check is met when its
// interval (or test) puts it inside the goal, MISSED only when outside, inconclusive
// otherwise; only windows the host trusted are judged where it was measured.
func TestFidelityJudge(t *testing.T) {
	mm := func(name string, xs ...float64) Metric { return latency(name, xs) }
	hosted := func(m Metric, host ...string) Metric { m.Host = host; return m }
	const T, U, D = analysis.Trusted, analysis.Untrusted, analysis.Degraded
	within1 := Goal{MeasuredMinusModelMS: &Range{Min: -1, Max: 1}}
	ratio := Goal{ThroughputRatioMin: ptr(1.0)}
	bench := func(set, flavor string, xs ...float64) Metric {
		return Metric{Name: "b/" + set + "/" + flavor + ".writes_per_s", Unit: "writes/s", Better: Higher, Samples: xs}
	}
	tests := []struct {
		name    string
		goal    Goal
		night   *File
		entry   string
		verdict string
		// deciding: the What of the checks that decided, in order; rule: in the first
		// one's Rule.
		deciding []string
		rule     string
		checks   int
	}{
		{"met: every interval inside, the tightest decides", within1, fileOf(
			mm("e/measured_minus_model.before.D1", 0.7, 0.9, 0.8, 0.85, 0.75),
			mm("e/measured_minus_model.before.D2", 0.5, 0.6, 0.55),
			mm("e/measured_minus_model.after.D1", 0.9, 0.95, 0.92),
			mm("e/measured_minus_model.after.all", 5, 5, 5), // "all" is not a DC: not checked
			mm("e/latency.mean.after.D1", 42, 42, 42),
			mm("other/measured_minus_model.after.D1", 9, 9, 9),
		), "e", FidelityMet, []string{"measured_minus_model.after.D1"}, "inside the goal", 3},
		// The median of these (0.8) is inside; their spread says the mean may not be.
		{"one odd repetition: inconclusive, not met", within1, fileOf(
			mm("e/measured_minus_model.before.D1", 0.7, 0.9, 0.8, 3.0, 0.75),
		), "e", FidelityInconclusive, []string{"measured_minus_model.before.D1"}, "across the bound +1", 1},
		{"a stalled repetition the host did not trust is left out", within1, fileOf(
			hosted(mm("e/measured_minus_model.before.D1", 0.7, 0.9, 0.8, 3.0, 0.75), T, T, T, U, T),
		), "e", FidelityMet, []string{"measured_minus_model.before.D1"}, "inside the goal", 1},
		{"missed above: the interval outside", within1, fileOf(
			mm("e/measured_minus_model.before.D1", 1.3, 1.4, 1.35, 1.45, 1.32),
			mm("e/measured_minus_model.before.D2", 0.5, 0.6, 0.55),
		), "e", FidelityMissed, []string{"measured_minus_model.before.D1"}, "outside the goal", 2},
		// Three medians above the bound, their interval reaching below it.
		{"above in the median, not confidently", within1, fileOf(
			mm("e/measured_minus_model.before.D1", 1.2, 1.3, 1.1),
		), "e", FidelityInconclusive, []string{"measured_minus_model.before.D1"}, "across the bound +1", 1},
		{"missed below: links shorter than the plan", Goal{MeasuredMinusModelMS: &Range{Min: -0.5, Max: 3}}, fileOf(
			mm("e/measured_minus_model.before.D1", -0.9, -0.8, -1),
		), "e", FidelityMissed, []string{"measured_minus_model.before.D1"}, "outside the goal", 1},
		// The night of the issue: zookeeper-two-dc-400 at +3.07 and +3.17 against +3,
		// one of its ten windows trusted.
		{"above the goal with one window trusted: inconclusive", Goal{MeasuredMinusModelMS: &Range{Min: -3, Max: 3}}, fileOf(
			hosted(mm("z/measured_minus_model.before.D1", 3.0, 3.1, 3.07, 3.2, 3.05), T, D, D, U, D),
			hosted(mm("z/measured_minus_model.after.D1", 3.1, 3.3, 3.17, 3.2, 3.15), D, U, D, D, U),
		), "z", FidelityInconclusive, []string{"measured_minus_model.before.D1", "measured_minus_model.after.D1"},
			"1 of 5 windows trusted: a mean's interval needs 2", 2},
		{"met with every window untrusted: inconclusive", within1, fileOf(
			hosted(mm("e/measured_minus_model.before.D1", 0.5, 0.6, 0.55, 0.52, 0.58), U, U, D, U, U),
		), "e", FidelityInconclusive, []string{"measured_minus_model.before.D1"}, "0 of 5 windows trusted", 1},
		// The window's own verdict decides, not its run's: each run's after-crash window
		// stalled, the before-crash ones did not.
		{"the window's verdict, not the run's", within1, fileOf(
			Metric{Name: "e/measured_minus_model.before.D1", Samples: []float64{0.5, 0.6, 0.55}, Host: []string{D, D, D}, WindowHost: []string{T, T, T}},
			Metric{Name: "e/measured_minus_model.after.D1", Samples: []float64{0.5, 0.6, 0.55}, Host: []string{D, D, D}, WindowHost: []string{D, D, D}},
		), "e", FidelityInconclusive, []string{"measured_minus_model.after.D1"}, "0 of 3 windows trusted", 2},
		{"no data: the entry measured nothing", within1, fileOf(mm("other/measured_minus_model.before.D1", 0.1)), "e", FidelityNoData, nil, "", 0},
		{"no goal", Goal{}, fileOf(mm("e/measured_minus_model.before.D1", 0.1)), "e", FidelityNoGoal, nil, "", 0},
		{"bench met", Goal{ThroughputRatioMin: ptr(1.0), NoTrend: true}, fileOf(
			bench("bench-closed-3srv-fsync-off", "poled", 21000, 21500, 20900, 21300, 21100),
			bench("bench-closed-3srv-fsync-off", "zookeeper", 13800, 13700, 14000, 13600, 13900),
			bench("bench-closed-3srv-fsync-on", "poled", 10300, 10400, 10200, 10350, 10250),
			bench("bench-closed-3srv-fsync-on", "zookeeper", 9500, 9400, 9450, 9550, 9420),
			Metric{Name: "b/bench-closed-3srv-fsync-on/poled.p50_ms", Unit: "ms", Samples: []float64{1, 2, 3, 4, 5}},
		), "b", FidelityMet, []string{"bench-closed-3srv-fsync-on: poled/zookeeper writes/s", "bench-closed-3srv-fsync-on: poled writes/s over the windows: Sen's slope -19 writes/s/window (-0.2%)"},
			"above 1 at Mann-Whitney p = 0.00794 over 5+5 windows", 6},
		// The night of the issue, fsync on: 6,444 against 7,047 writes/s (0.91x), the
		// windows interleaved so that U = 10 of 25: exact p = 2·87/252 = 0.69.
		{"bench: 0.91x at p = 0.69 is inconclusive", ratio, fileOf(
			bench("fsync-on", "poled", 5900, 6400, 6444, 7100, 7500),
			bench("fsync-on", "zookeeper", 6300, 6900, 7047, 7200, 7400),
		), "b", FidelityInconclusive, []string{"fsync-on: poled/zookeeper writes/s"},
			"Mann-Whitney p = 0.69 ≥ 0.05 over 5+5 windows: no evidence the ratio differs from 1", 1},
		// Every poled window below every ZooKeeper window: exact p = 2/252 = 0.008.
		{"bench: 0.8x at p = 0.008 is missed", ratio, fileOf(
			bench("fsync-on", "poled", 7800, 7900, 8000, 8050, 8100),
			bench("fsync-on", "zookeeper", 9900, 9950, 10000, 10100, 10200),
		), "b", FidelityMissed, []string{"fsync-on: poled/zookeeper writes/s"}, "below 1 at Mann-Whitney p = 0.00794 over 5+5 windows", 1},
		// The ratio is judged against min × ZooKeeper's windows: 1.05x is no evidence
		// of 1.2x or more, nor of less.
		{"bench: a ratio near its goal", Goal{ThroughputRatioMin: ptr(1.2)}, fileOf(
			bench("s", "poled", 10000, 10100, 9900),
			bench("s", "zookeeper", 9500, 9400, 9600),
		), "b", FidelityInconclusive, []string{"s: poled/zookeeper writes/s"}, "p = 0.1 ≥ 0.05", 1},
		// ZooKeeper still warming up: its windows rise every time.
		{"bench: trend", Goal{ThroughputRatioMin: ptr(1.0), NoTrend: true}, fileOf(
			bench("s", "poled", 21000, 21500, 20900, 21300, 21100),
			bench("s", "zookeeper", 9000, 10000, 11000, 12000, 13000),
		), "b", FidelityMissed, []string{"s: zookeeper writes/s over the windows: Sen's slope +1000 writes/s/window (+9.1%)"}, "a trend", 3},
		// The servers' RTT measurements against the plan, per repetition.
		{"rtt met", Goal{RTTErrorPctMax: ptr(25.0)}, fileOf(
			Metric{Name: "e/" + RTTErrorKey, Unit: "%", Samples: []float64{4, 6, 5, 5.5, 4.5}},
		), "e", FidelityMet, []string{RTTErrorKey}, "inside the goal", 1},
		{"rtt missed: a monitor misreads its links", Goal{RTTErrorPctMax: ptr(25.0)}, fileOf(
			Metric{Name: "e/" + RTTErrorKey, Unit: "%", Samples: []float64{39, 41, 40, 42, 38}},
		), "e", FidelityMissed, []string{RTTErrorKey}, "outside the goal", 1},
		{"rtt missed beside a latency met", Goal{RTTErrorPctMax: ptr(25.0), MeasuredMinusModelMS: &Range{Min: -1, Max: 1}}, fileOf(
			Metric{Name: "e/" + RTTErrorKey, Unit: "%", Samples: []float64{39, 41, 40}},
			mm("e/measured_minus_model.before.D1", 0.5, 0.6, 0.55),
		), "e", FidelityMissed, []string{RTTErrorKey}, "outside the goal", 2},
		{"rtt: not measured is no data", Goal{RTTErrorPctMax: ptr(25.0)}, fileOf(mm("e/measured_minus_model.before.D1", 0.1)), "e", FidelityNoData, nil, "", 0},
		{"bench: one flavor's windows only", Goal{ThroughputRatioMin: ptr(1.2)}, fileOf(bench("s", "poled", 10000)), "b", FidelityNoData, nil, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fd := tc.goal.Judge(tc.night, tc.entry)
			var deciding []string
			for _, c := range fd.Deciding() {
				deciding = append(deciding, c.What)
			}
			rule := ""
			if d := fd.Deciding(); len(d) > 0 {
				rule = d[0].Rule
			}
			if fd.Verdict != tc.verdict || !reflect.DeepEqual(deciding, tc.deciding) || len(fd.Checks) != tc.checks || fd.Host.Verdict != HostNotMeasured ||
				!strings.Contains(rule, tc.rule) {
				t.Errorf("verdict %s, deciding %q (rule %q), %d checks, host %q\nwant %s, %q (rule %q), %d checks\n%+v", fd.Verdict, deciding, rule, len(fd.Checks), fd.Host.Verdict,
					tc.verdict, tc.deciding, tc.rule, tc.checks, fd.Checks)
			}
			for _, c := range fd.Checks {
				if c.OK != (c.Verdict == FidelityMet) || c.Rule == "" {
					t.Errorf("check %s: ok %v, verdict %s, rule %q", c.What, c.OK, c.Verdict, c.Rule)
				}
			}
		})
	}
}

// TestFidelityRoundTripAndOutput: verdicts survive bench.json, and the tables say
// what decided them and by which rule.
func TestFidelityRoundTripAndOutput(t *testing.T) {
	f := fileOf(
		latency("e/measured_minus_model.before.D1", []float64{1.3, 1.4, 1.35, 1.45, 1.32}),
		latency("i/measured_minus_model.before.D1", []float64{0.5, 0.6, 0.55}),
	)
	f.Metrics[1].Host = []string{analysis.Trusted, analysis.Untrusted, analysis.Untrusted}
	g := Goal{MeasuredMinusModelMS: &Range{Min: -1, Max: 1}}
	fd, in := g.Judge(f, "e"), g.Judge(f, "i")
	fd.Backend = "docker"
	f.Fidelity = []Fidelity{fd, in,
		{Entry: "gone", Goal: g, Verdict: FidelityNoData, Note: "the entry failed: docker backend: no engine", Host: HostVerdict{Verdict: HostNotMeasured}},
		{Entry: "away", Goal: g, Verdict: FidelitySkipped, Note: "this machine cannot run it: java not found", Host: HostVerdict{Verdict: HostNotMeasured}}}
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
		"e docker MISSED measured−model in [-1, +1] ms measured_minus_model.before.D1 +1.36 ms [+1.29, +1.44] (in [-1, +1]): 95 % interval of the mean outside the goal over 5 windows, host not measured not measured",
		"i - inconclusive measured−model in [-1, +1] ms measured_minus_model.before.D1 +0.50 ms (in [-1, +1]): 1 of 3 windows trusted: a mean's interval needs 2",
		"gone - no data measured−model in [-1, +1] ms the entry failed: docker backend: no engine not measured",
		"away - skipped measured−model in [-1, +1] ms this machine cannot run it: java not found",
	} {
		if !strings.Contains(squash(text.String()), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{
		"| `e` | docker | **MISSED** | measured−model in [-1, +1] ms | measured_minus_model.before.D1 +1.36 ms [+1.29, +1.44] (in [-1, +1]): 95 % interval of the mean outside the goal over 5 windows, host not measured | not measured |",
		"| measured_minus_model.before.D1 | +1.36 ms | [+1.29, +1.44] | 5 windows, host not measured | in [-1, +1] | **MISSED** | 95 % interval of the mean outside the goal |",
		"| measured_minus_model.before.D1 | +0.50 ms | - | 1 of 3 windows trusted | in [-1, +1] | inconclusive | 1 of 3 windows trusted: a mean's interval needs 2 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, tc := range []struct {
		got, want []string
	}{{FidelityMisses(f.Fidelity), []string{"e"}}, {FidelityInconclusives(f.Fidelity), []string{"i"}}, {FidelitySkips(f.Fidelity), []string{"away"}}} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("entries %v, want %v", tc.got, tc.want)
		}
	}
}

// TestCollectWindowHost: a window's metric carries the host's verdict on that window
// of each run, a metric of the whole run only its run's.
func TestCollectWindowHost(t *testing.T) {
	root := t.TempDir()
	// writeRuns trusts every run's before window, and gives after the run's verdict.
	writeRuns(t, root, "two-dc", "local", []run{{21, analysis.Untrusted, 0, ""}, {22, analysis.Trusted, 0, ""}, {23, analysis.Degraded, 0, ""}})
	f, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.Metric("two-dc/latency.mean.before.D1")
	if want := []string{analysis.Trusted, analysis.Trusted, analysis.Trusted}; !slices.Equal(m.WindowHost, want) {
		t.Errorf("before window: %v, want %v (run: %v)", m.WindowHost, want, m.Host)
	}
	if w, _ := f.Metric("two-dc/writes_per_s"); w.WindowHost != nil || len(w.Host) != 3 {
		t.Errorf("a metric of the run: window host %v, host %v", w.WindowHost, w.Host)
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
