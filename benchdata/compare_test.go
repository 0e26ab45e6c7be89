package benchdata

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func normal(r *rand.Rand, n int, mean, sd float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = mean + sd*r.NormFloat64()
	}
	return xs
}

func fileOf(ms ...Metric) *File { return &File{Format: FormatVersion, Metrics: ms} }

func latency(name string, samples []float64) Metric {
	k := kindOf(Key(name))
	return Metric{Name: name, Unit: k.unit, Better: k.better, MinEffect: k.effect, Samples: samples}
}

// TestCompareSynthetic runs Compare on drawn samples, 5 per side as the nightly suite
// takes them.
func TestCompareSynthetic(t *testing.T) {
	const name = "x/latency.mean.before.D1"
	tests := []struct {
		name          string
		oldMean, oldS float64
		newMean, newS float64
		want          Verdict
		note          string
	}{
		// +3 ms on 21 ms with 0.3 ms noise: significant and above max(1 ms, 5 %).
		{"real shift", 21, 0.3, 24, 0.3, Regressed, ""},
		{"real improvement", 24, 0.3, 21, 0.3, Improved, ""},
		// +0.3 ms with 0.02 ms noise: the test rejects (p = 0.008), the effect is
		// below 1 ms, so it is noise for this metric.
		{"significant but tiny", 21, 0.02, 21.3, 0.02, Same, "below the minimum effect"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			c, err := Compare(fileOf(latency(name, normal(r, 5, tc.oldMean, tc.oldS))), fileOf(latency(name, normal(r, 5, tc.newMean, tc.newS))), DefaultAlpha)
			if err != nil {
				t.Fatal(err)
			}
			row := c.Rows[0]
			if row.Verdict != tc.want || !strings.Contains(row.Note, tc.note) {
				t.Errorf("verdict %q (%s), p %.4f; want %q (%s)", row.Verdict, row.Note, row.P, tc.want, tc.note)
			}
			if tc.want == Same && row.P >= DefaultAlpha {
				t.Errorf("p %.4f: the case should be significant and suppressed by the effect size", row.P)
			}
		})
	}
}

// TestCompareNeither: a metric better neither way (the host's speed) that moved by
// far is reported as moved, with its p, and fails nothing; the same shift of a
// latency is a regression.
func TestCompareNeither(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	old, cur := normal(r, 5, 60, 1), normal(r, 5, 70, 1)
	host := func(xs []float64) Metric {
		return Metric{Name: "x/host_ref_ms", Unit: "ms", Better: Neither, MinEffect: MinEffect{Rel: 0.1}, Samples: xs}
	}
	c, err := Compare(fileOf(host(old)), fileOf(host(cur)), DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	if row := c.Rows[0]; row.Verdict != Moved || row.Verdict.Fails() || row.P >= DefaultAlpha || c.Failures() != 0 {
		t.Errorf("verdict %q (%s), p %.4f, %d failing", row.Verdict, row.Note, row.P, c.Failures())
	}
	lat := func(xs []float64) Metric { return latency("x/latency.mean.before.D1", xs) }
	if c, err := Compare(fileOf(lat(old)), fileOf(lat(cur)), DefaultAlpha); err != nil || c.Rows[0].Verdict != Regressed {
		t.Errorf("a latency moved as far: %v %+v", err, c)
	}
}

// TestCompareEqualDistributions draws both sides from one distribution many times: the
// test alone rejects at most alpha of the time (the exact 5+5 test is conservative:
// P(p < 0.05) = P(p ≤ 0.032) = 0.032), and with the minimum effect nothing is flagged.
func TestCompareEqualDistributions(t *testing.T) {
	const trials = 2000
	r := rand.New(rand.NewPCG(3, 4))
	significant, flagged := 0, 0
	for range trials {
		old := latency("x/latency.mean.before.D1", normal(r, 5, 21, 0.3))
		cur := latency("x/latency.mean.before.D1", normal(r, 5, 21, 0.3))
		c, err := Compare(fileOf(old), fileOf(cur), DefaultAlpha)
		if err != nil {
			t.Fatal(err)
		}
		if c.Rows[0].P < DefaultAlpha {
			significant++
		}
		flagged += c.Failures()
	}
	rate := float64(significant) / trials
	if rate > DefaultAlpha || rate < 0.015 {
		t.Errorf("rejection rate %.3f under the null, want about 0.032 (at most alpha %v)", rate, DefaultAlpha)
	}
	if flagged != 0 {
		t.Errorf("%d of %d equal comparisons flagged", flagged, trials)
	}
}

func TestCompareRules(t *testing.T) {
	lost := func(xs ...float64) Metric { return latency("x/"+LostWritesKey, xs) }
	tests := []struct {
		name     string
		old, cur *File
		want     []Verdict
	}{
		{"lost writes in new fail even if old lost as many", fileOf(lost(0, 2, 0)), fileOf(lost(0, 2, 0)), []Verdict{LostWrites}},
		{"no lost writes", fileOf(lost(0, 0, 0, 0, 0)), fileOf(lost(0, 0, 0, 0, 0)), []Verdict{Same}},
		{"metric gone from new", fileOf(latency("x/election_ms", []float64{1, 2})), fileOf(), []Verdict{Missing}},
		{"metric only in new", fileOf(), fileOf(latency("x/election_ms", []float64{1, 2})), []Verdict{New}},
		// Higher is better for throughput: a drop is the regression.
		{"throughput drop", fileOf(latency("x/writes_per_s", []float64{1000, 1001, 999, 1000, 1002})),
			fileOf(latency("x/writes_per_s", []float64{900, 901, 899, 902, 900})), []Verdict{Regressed}},
		// 3+3 can never reach p < 0.05.
		{"too few samples", fileOf(latency("x/election_ms", []float64{100, 101, 102})),
			fileOf(latency("x/election_ms", []float64{900, 901, 902})), []Verdict{Same}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(tc.old, tc.cur, DefaultAlpha)
			if err != nil {
				t.Fatal(err)
			}
			var got []Verdict
			for _, r := range c.Rows {
				got = append(got, r.Verdict)
			}
			if len(got) != len(tc.want) || got[0] != tc.want[0] {
				t.Errorf("verdicts %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCompareOutput pins the text and Markdown layout.
func TestCompareOutput(t *testing.T) {
	old := fileOf(latency("two-dc/latency.mean.before.D1", []float64{21.0, 21.1, 20.9, 21.2, 20.95}), latency("two-dc/"+LostWritesKey, []float64{0, 0, 0, 0, 0}))
	cur := fileOf(latency("two-dc/latency.mean.before.D1", []float64{24.0, 24.1, 23.9, 24.2, 23.95}), latency("two-dc/"+LostWritesKey, []float64{0, 0, 0, 0, 0}))
	c, err := Compare(old, cur, DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	var text, md bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"two-dc/latency.mean.before.D1 21.0 ms 24.0 ms +14.3% 0.008 5+5 REGRESSION", "1 failing", "two-dc/lost_acknowledged_writes 0 writes 0 writes 0 1.000 5+5 ~"} {
		if !strings.Contains(squash(text.String()), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"### Nightly benchmarks: 1 failing metric(s)", "| `two-dc/latency.mean.before.D1` | 21.0 ms | 24.0 ms | +14.3% | 0.008 | 5+5 | **REGRESSION** |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// squash collapses runs of spaces, so the test does not pin the column widths.
func squash(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

// TestCompareDeterministic: a simulated metric has no test; equal samples are ~, any
// difference is CHANGED naming both commits, and a REGRESSION (failing) only when worse
// by the minimum effect.
func TestCompareDeterministic(t *testing.T) {
	sim := func(name string, xs ...float64) Metric {
		m := latency(name, xs)
		m.Deterministic = true
		return m
	}
	night := func(commit string, planted []string, ms ...Metric) *File {
		f := fileOf(ms...)
		f.Env.Commit, f.Env.Planted = commit, planted
		return f
	}
	const d1 = "s/latency.mean.before.D1"
	tests := []struct {
		name     string
		old, cur *File
		verdict  Verdict
		note     string
		failures int
	}{
		{"identical", night("aaa", nil, sim(d1, 21.55, 21.6, 21.5, 21.58)), night("bbb", nil, sim(d1, 21.55, 21.6, 21.5, 21.58)), Same, "identical (simulated)", 0},
		// One repetition moved by 0.01 ms: far below any test's reach, still a change.
		{"tiny change", night("aaa", nil, sim(d1, 21.55, 21.6, 21.5, 21.58)), night("bbb", nil, sim(d1, 21.55, 21.61, 21.5, 21.58)), Changed,
			"simulated; aaa → bbb; below the minimum effect 1.08 ms", 0},
		{"order of the samples", night("aaa", nil, sim(d1, 1, 2)), night("aaa", nil, sim(d1, 2, 1)), Changed,
			"simulated; same commit aaa: another environment, or not deterministic; below the minimum effect 1.00 ms", 0},
		{"better by the effect", night("aaa", nil, sim(d1, 24, 24, 24)), night("bbb", nil, sim(d1, 21, 21, 21)), Changed, "simulated; aaa → bbb; better", 0},
		// Worse by 3 ms: a regression with 3 samples a side, where the test could never say so.
		{"worse by the effect", night("aaa", nil, sim(d1, 21, 21, 21)), night("bbb", nil, sim(d1, 24, 24, 24)), Regressed, "simulated; aaa → bbb", 1},
		{"planted", night("aaa", nil, sim(d1, 21, 21, 21)), night("aaa", []string{"intra-dc-rtt=3"}, sim(d1, 24, 24, 24)), Regressed,
			"simulated; planted --set intra-dc-rtt=3", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(tc.old, tc.cur, DefaultAlpha)
			if err != nil {
				t.Fatal(err)
			}
			r := c.Rows[0]
			if r.Verdict != tc.verdict || r.Note != tc.note || c.Failures() != tc.failures || !math.IsNaN(r.P) {
				t.Errorf("verdict %q (%s), %d failing, p %v; want %q (%s), %d failing", r.Verdict, r.Note, c.Failures(), r.P, tc.verdict, tc.note, tc.failures)
			}
		})
	}
}

// TestCompareShowsFidelity: the new night's verdicts follow the comparison.
func TestCompareShowsFidelity(t *testing.T) {
	old := fileOf(latency("e/latency.mean.before.D1", []float64{21, 21.1, 20.9, 21.2, 20.95}))
	cur := fileOf(latency("e/latency.mean.before.D1", []float64{21, 21.1, 20.9, 21.2, 20.95}))
	cur.Env.Suite, cur.Env.Quick, cur.Env.Planted = "default", true, []string{"intra-dc-rtt=3"}
	cur.Fidelity = []Fidelity{{Entry: "e", Backend: "local", Goal: Goal{MeasuredMinusModelMS: &Range{Min: -1, Max: 1}}, Verdict: FidelityMissed,
		Checks: []Check{{What: "measured_minus_model.before.D1", Value: 1.4, Unit: "ms", Bound: "in [-1, +1]", Margin: -0.4, Kind: "measured_minus_model"}},
		Host:   HostVerdict{Verdict: HostNotMeasured}},
		{Entry: "i", Verdict: FidelityInconclusive, Host: HostVerdict{Verdict: HostNotMeasured}}}
	c, err := Compare(old, cur, DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	var text, md bytes.Buffer
	c.WriteText(&text)
	c.WriteMarkdown(&md)
	for _, want := range []string{"fidelity of the new night (0 of 2 entries met their goal, 1 missed, 1 inconclusive):", "e local MISSED", "note: new: a planted regression (nightly --set intra-dc-rtt=3)"} {
		if !strings.Contains(squash(text.String()), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"### Nightly benchmarks: no regression; 1 fidelity miss(es)", "suite default --quick, PLANTED intra-dc-rtt=3",
		"#### Fidelity of the new night: 0 of 2 entries met their goal, 1 missed, 1 inconclusive", "| `e` | local | **MISSED** |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if c.Failures() != 0 {
		t.Errorf("a fidelity miss fails the comparison")
	}
}
