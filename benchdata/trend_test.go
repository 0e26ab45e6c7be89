package benchdata

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMannKendall(t *testing.T) {
	tests := []struct {
		name  string
		xs    []float64
		s     int
		p     float64
		exact bool
		slope float64
	}{
		// 5 rising values: the one order of 5! with S = 10, either way: 2/120.
		{"rising 5", []float64{100, 110, 120, 130, 140}, 10, 2.0 / 120, true, 10},
		{"falling 5", []float64{140, 130, 120, 110, 100}, -10, 2.0 / 120, true, -10},
		// 4 values can never reach 0.05: 2/24.
		{"rising 4", []float64{1, 2, 3, 4}, 6, 2.0 / 24, true, 1},
		// One inversion in 6: P(S ≥ 13) = (1 + 5)/720, two-sided 12/720.
		{"one swap in 6", []float64{1, 2, 4, 3, 5, 6}, 13, 12.0 / 720, true, 1},
		{"flat order", []float64{3, 1, 4, 2, 5, 0}, -1, 1, true, -0.25},
		// Ties: normal approximation, σ² = (4·3·13 − 2·1·9)/18, z = (5 − 1)/σ.
		{"ties", []float64{1, 1, 2, 3}, 5, 0.14856177489186884, false, 0.8333333333333333},
		{"all equal", []float64{7, 7, 7, 7, 7}, 0, 1, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MannKendall(tc.xs)
			if err != nil {
				t.Fatal(err)
			}
			if got.S != tc.s || math.Abs(got.P-tc.p) > 1e-9 || got.Exact != tc.exact || got.Slope != tc.slope || got.N != len(tc.xs) {
				t.Errorf("got %+v, want S %d, p %.6f, exact %v, slope %g", got, tc.s, tc.p, tc.exact, tc.slope)
			}
		})
	}
	for _, bad := range [][]float64{nil, {1}, {1, math.NaN(), 2}} {
		if _, err := MannKendall(bad); err == nil {
			t.Errorf("MannKendall(%v): no error", bad)
		}
	}
}

// TestMahonian: the counts of permutations by inversions add up to n!, and are
// symmetric (reversing a permutation maps k inversions to n(n−1)/2 − k).
func TestMahonian(t *testing.T) {
	fact := 1.0
	for n := 1; n <= 12; n++ {
		fact *= float64(n)
		d := mahonian(n)
		sum := 0.0
		for k, c := range d {
			sum += c
			if c != d[len(d)-1-k] {
				t.Fatalf("n=%d: not symmetric at %d", n, k)
			}
		}
		if sum != fact || len(d) != n*(n-1)/2+1 {
			t.Errorf("n=%d: %d counts summing to %g, want %d and %g", n, len(d), sum, n*(n-1)/2+1, fact)
		}
	}
}

// TestMannKendallNull: under the null (independent draws) the exact test at 5 values
// rejects about 2/120 of the time per side pair (P(|S| = 10) = 1/60), never more than
// alpha; a steady rise of two standard deviations per window is found most of the time.
func TestMannKendallNull(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const trials = 3000
	null, trend := 0, 0
	for range trials {
		xs := normal(r, 5, 1000, 50)
		if mk, _ := MannKendall(xs); mk.P < TrendAlpha {
			null++
		}
		for i := range xs {
			xs[i] += 100 * float64(i)
		}
		if mk, _ := MannKendall(xs); mk.P < TrendAlpha {
			trend++
		}
	}
	if rate := float64(null) / trials; rate > TrendAlpha || rate < 0.008 {
		t.Errorf("null rejection rate %.3f, want about 1/60", rate)
	}
	if rate := float64(trend) / trials; rate < 0.5 {
		t.Errorf("a rise of 2 sd per window found %.2f of the time", rate)
	}
}

// TestMannKendallLong: beyond ExactLimit the normal approximation is used.
func TestMannKendallLong(t *testing.T) {
	xs := make([]float64, ExactLimit+10)
	for i := range xs {
		xs[i] = float64(i % 7)
	}
	mk, err := MannKendall(xs)
	if err != nil || mk.Exact || mk.P <= 0 || mk.P > 1 {
		t.Errorf("%+v %v", mk, err)
	}
}
