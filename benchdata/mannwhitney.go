package benchdata

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// ExactLimit is the largest n1+n2 for which MannWhitney uses the exact distribution of U
// (when there are no ties). Up to it the counts stay below 2^53 (C(40,20) ≈ 1.4e11), so
// float64 holds them exactly; beyond it the normal approximation is good.
const ExactLimit = 40

// exactLimit is ExactLimit, variable so the tests can reach the normal approximation.
var exactLimit = ExactLimit

// MWU is the result of a two-sided Mann-Whitney U test.
type MWU struct {
	U     float64 // U of the first sample: pairs (x, y) with x > y, plus half the ties
	P     float64 // two-sided p-value
	Exact bool    // P from the exact distribution of U, else the normal approximation
}

// MannWhitney tests whether x and y come from the same distribution (two-sided).
//
// Without ties and with n1+n2 ≤ ExactLimit the p-value is exact: 2·min(P(U ≤ u),
// P(U ≥ u)) under the null distribution of U, counted by the Gaussian binomial
// coefficient [n1+n2 choose n1]_q (Mann & Whitney 1947), capped at 1. Otherwise it is
// the normal approximation with midranks, the tie correction of the variance
// (σ² = n1·n2/12 · ((n+1) − Σ(t³−t)/(n(n−1)))) and a continuity correction of 1/2, as
// scipy.stats.mannwhitneyu(method="asymptotic") computes it. When every value is the
// same, P is 1.
func MannWhitney(x, y []float64) (MWU, error) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return MWU{}, errors.New("benchdata: mann-whitney: an empty sample")
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	for _, o := range all {
		if math.IsNaN(o.v) {
			return MWU{}, errors.New("benchdata: mann-whitney: NaN in a sample")
		}
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Midranks: a run of t equal values shares the mean of the ranks it spans.
	var r1, tieSum float64
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		t := float64(j - i)
		rank := float64(i+j+1) / 2 // mean of ranks i+1 .. j
		for k := i; k < j; k++ {
			if all[k].first {
				r1 += rank
			}
		}
		if t > 1 {
			ties = true
			tieSum += t*t*t - t
		}
		i = j
	}
	f1, f2 := float64(n1), float64(n2)
	u := r1 - f1*(f1+1)/2
	res := MWU{U: u}
	if !ties && n1+n2 <= exactLimit {
		res.Exact = true
		counts := uCounts(n1, n2)
		var total, le, ge float64
		for k, c := range counts {
			total += c
			if float64(k) <= u {
				le += c
			}
			if float64(k) >= u {
				ge += c
			}
		}
		res.P = min(1, 2*min(le, ge)/total)
		return res, nil
	}
	n := f1 + f2
	mean := f1 * f2 / 2
	variance := f1 * f2 / 12 * ((n + 1) - tieSum/(n*(n-1)))
	if variance <= 0 {
		res.P = 1 // every value equal: no evidence of any difference
		return res, nil
	}
	d := math.Max(0, math.Abs(u-mean)-0.5)
	z := d / math.Sqrt(variance)
	res.P = min(1, 2*distuv.UnitNormal.Survival(z))
	return res, nil
}

// uCounts returns, for k = 0..n1·n2, how many of the C(n1+n2, n1) orderings of two
// samples without ties give U = k: the coefficients of the Gaussian binomial
// [n1+n2 choose n1]_q = Π_{i=1..n1} (1 − q^{n2+i}) / (1 − q^i). Each step leaves
// [n2+i choose i]_q, whose coefficients are non-negative integers.
func uCounts(n1, n2 int) []float64 {
	// The product before each division reaches degree i·n2 + i.
	c := make([]float64, n1*n2+n1+1)
	c[0] = 1
	deg := 0
	for i := 1; i <= n1; i++ {
		// multiply by (1 − q^{n2+i})
		m := n2 + i
		for k := deg + m; k >= m; k-- {
			c[k] -= c[k-m]
		}
		deg += m
		// divide by (1 − q^i): a running sum with stride i
		for k := i; k <= deg; k++ {
			c[k] += c[k-i]
		}
		deg -= i
	}
	return c[:deg+1]
}
