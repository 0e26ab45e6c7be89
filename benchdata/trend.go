package benchdata

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Trend is the result of a Mann-Kendall test for a monotonic trend in a series (the
// windows of a benchmark, in the order they were measured).
type Trend struct {
	N     int
	S     int     // Kendall's S: rising pairs minus falling pairs
	P     float64 // two-sided p-value
	Exact bool    // P from the exact distribution of S, else the normal approximation
	// Slope is Sen's estimate: the median of the pairwise slopes, per step of the series.
	Slope float64
}

// TrendMinN is the shortest series in which MannKendall can reach p < 0.05: with 5
// values the smallest two-sided p-value is 2/5! = 0.017, with 4 it is 2/4! = 0.083.
const TrendMinN = 5

// MannKendall tests whether xs has a monotonic trend (two-sided). S = Σ_{i<j}
// sign(x_j − x_i). Without ties and with n ≤ ExactLimit, P is exact: under the null
// every order is equally likely, so S = n(n−1)/2 − 2·inversions and the inversions of
// a random permutation follow the Mahonian distribution, counted here. Otherwise it is
// the normal approximation with the tie correction of the variance
// (σ² = (n(n−1)(2n+5) − Σ t(t−1)(2t+5)) / 18) and a continuity correction of 1.
func MannKendall(xs []float64) (Trend, error) {
	n := len(xs)
	if n < 2 {
		return Trend{N: n, P: 1}, errors.New("benchdata: mann-kendall: fewer than 2 values")
	}
	if slices.ContainsFunc(xs, math.IsNaN) {
		return Trend{N: n}, errors.New("benchdata: mann-kendall: NaN in the series")
	}
	t := Trend{N: n}
	var slopes []float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			switch {
			case xs[j] > xs[i]:
				t.S++
			case xs[j] < xs[i]:
				t.S--
			}
			slopes = append(slopes, (xs[j]-xs[i])/float64(j-i))
		}
	}
	t.Slope = Median(slopes)
	counts := map[float64]int{}
	for _, x := range xs {
		counts[x]++
	}
	ties := len(counts) < n
	if t.S == 0 {
		t.P, t.Exact = 1, !ties && n <= ExactLimit
		return t, nil
	}
	if !ties && n <= ExactLimit {
		t.Exact = true
		pairs := n * (n - 1) / 2
		// P(S ≥ |s|) = P(inversions ≤ (pairs − |s|)/2).
		dist := mahonian(n)
		total, tail := 0.0, 0.0
		for k, c := range dist {
			total += c
			if 2*k <= pairs-max(t.S, -t.S) {
				tail += c
			}
		}
		t.P = min(1, 2*tail/total)
		return t, nil
	}
	v := float64(n*(n-1)*(2*n+5)) / 18
	for _, c := range counts {
		v -= float64(c*(c-1)*(2*c+5)) / 18
	}
	if v <= 0 {
		t.P = 1
		return t, nil
	}
	s := float64(t.S)
	z := (s - math.Copysign(1, s)) / math.Sqrt(v)
	t.P = min(1, 2*distuv.UnitNormal.Survival(math.Abs(z)))
	return t, nil
}

// mahonian returns, for k = 0..n(n−1)/2, how many permutations of n elements have k
// inversions (as float64: relative weights are all the test needs).
func mahonian(n int) []float64 {
	dist := []float64{1}
	for m := 2; m <= n; m++ {
		// Inserting the m-th element adds 0..m−1 inversions.
		next := make([]float64, len(dist)+m-1)
		for k, c := range dist {
			for a := range m {
				next[k+a] += c
			}
		}
		dist = next
	}
	return dist
}
