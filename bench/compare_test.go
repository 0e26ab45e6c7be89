package bench

import (
	"bytes"
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
