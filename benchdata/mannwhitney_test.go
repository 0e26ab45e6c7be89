package benchdata

import (
	"math"
	"testing"
)

// TestMannWhitneyKnownValues checks p-values against published ones.
func TestMannWhitneyKnownValues(t *testing.T) {
	tests := []struct {
		name  string
		x, y  []float64
		u, p  float64
		exact bool
	}{
		// scipy.stats.mannwhitneyu's documented example (Conover's males and females):
		// U1 = 17; method="exact" p = 0.1111111111111111.
		{"scipy example, exact", []float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 17, 0.1111111111111111, true},
		// The same with its second sample first: U = 3, the same p.
		{"scipy example, swapped", []float64{20, 11, 17, 12}, []float64{19, 22, 16, 29, 24}, 3, 0.1111111111111111, true},
		// Complete separation, 3+3: the exact p is 2/C(6,3) = 0.1 (tables of the
		// Mann-Whitney distribution; R's wilcox.test(1:3, 4:6) p-value = 0.1).
		{"separated 3+3", []float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.1, true},
		// 4+4: 2/C(8,4) = 2/70; 5+5: 2/252.
		{"separated 4+4", []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 0, 2.0 / 70, true},
		{"separated 5+5", []float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 25, 2.0 / 252, true},
		// Interleaved equally: p = 1.
		{"interleaved", []float64{1, 4, 5, 8}, []float64{2, 3, 6, 7}, 8, 1, true},
		// Ties force the normal approximation with tie correction and continuity
		// correction: ranks 1, 3, 3 | 3, 5, 6; U = 1; σ² = 9/12·(7 − 24/30) = 4.65;
		// z = (3.5 − 0.5)/√4.65; p = 0.1641597 (by hand, as scipy's asymptotic method).
		{"ties", []float64{1, 2, 2}, []float64{2, 3, 4}, 1, 0.16415970, false},
		// All equal: no evidence of a difference.
		{"all equal", []float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0}, 12.5, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MannWhitney(tc.x, tc.y)
			if err != nil {
				t.Fatal(err)
			}
			if got.U != tc.u || got.Exact != tc.exact || math.Abs(got.P-tc.p) > 1e-7 {
				t.Errorf("got U %v p %.10f exact %v, want U %v p %.10f exact %v", got.U, got.P, got.Exact, tc.u, tc.p, tc.exact)
			}
		})
	}
}

// TestMannWhitneyNormal checks the normal approximation, used beyond ExactLimit, on
// scipy's example (method="asymptotic": 0.11134688653314041) and on R's
// wilcox.test(c(1,2,3), c(4,5,6), exact=FALSE), p-value = 0.08086.
func TestMannWhitneyNormal(t *testing.T) {
	tests := []struct {
		x, y []float64
		p    float64
	}{
		{[]float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 0.11134688653314041},
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0.0808556},
	}
	for _, tc := range tests {
		// A tie far away from both samples' ranks does not move U, but forces the
		// approximation; so compute the approximation directly instead.
		got := normalP(tc.x, tc.y)
		if math.Abs(got-tc.p) > 1e-6 {
			t.Errorf("%v vs %v: p %.10f, want %.10f", tc.x, tc.y, got, tc.p)
		}
	}
}

// normalP runs MannWhitney with ExactLimit out of reach.
func normalP(x, y []float64) float64 {
	saved := exactLimit
	exactLimit = 0
	defer func() { exactLimit = saved }()
	r, _ := MannWhitney(x, y)
	return r.P
}

// TestUCounts checks the exact distribution: it sums to C(n1+n2, n1), is symmetric,
// and matches brute force over every split for small sizes.
func TestUCounts(t *testing.T) {
	for n1 := 1; n1 <= 7; n1++ {
		for n2 := 1; n2 <= 7; n2++ {
			got := uCounts(n1, n2)
			want := make([]float64, n1*n2+1)
			// Brute force: every subset of n1 of the ranks 0..n1+n2-1 is x's.
			n := n1 + n2
			for mask := 0; mask < 1<<n; mask++ {
				if popcount(mask) != n1 {
					continue
				}
				u, below := 0, 0
				for i := 0; i < n; i++ {
					if mask&(1<<i) != 0 {
						u += below
					} else {
						below++
					}
				}
				want[u]++
			}
			if len(got) != len(want) {
				t.Fatalf("%d+%d: %d counts, want %d", n1, n2, len(got), len(want))
			}
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("%d+%d: count of U=%d is %v, want %v", n1, n2, k, got[k], want[k])
				}
			}
		}
	}
	c := uCounts(20, 20)
	var sum float64
	for k := range c {
		sum += c[k]
		if c[k] != c[len(c)-1-k] {
			t.Fatalf("20+20 not symmetric at %d", k)
		}
	}
	if sum != 137846528820 { // C(40, 20)
		t.Errorf("20+20 sums to %v, want C(40,20) = 137846528820", sum)
	}
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func TestMinP(t *testing.T) {
	for _, tc := range []struct {
		n1, n2 int
		want   float64
	}{{3, 3, 0.1}, {4, 4, 2.0 / 70}, {5, 5, 2.0 / 252}, {1, 5, 1.0 / 3}, {0, 5, 1}} {
		if got := MinP(tc.n1, tc.n2); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("MinP(%d, %d) = %v, want %v", tc.n1, tc.n2, got, tc.want)
		}
	}
}
