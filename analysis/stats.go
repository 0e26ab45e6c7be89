// Package analysis turns a run's request records and events into the paper's numbers:
// latency per DC before and after the leader crash, election and recovery times, HDR
// histograms, a latency time series and its plot, a summary.json, and aggregates over
// repetitions with Student-t confidence intervals.
package analysis

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Quantile is the nearest-rank q-quantile of sorted (ascending) values: the smallest
// value with at least q·n values at or below it. It is NaN for no values.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[rank(len(sorted), q)]
}

// rank is the index of Quantile's value among n > 0 sorted values.
func rank(n int, q float64) int {
	// The epsilon keeps q·n = 99.00000000000001 from rounding up a rank.
	i := int(math.Ceil(q*float64(n)-1e-9)) - 1
	return min(max(i, 0), n-1)
}

// TQuantile is the p-quantile of Student's t distribution with df degrees of freedom.
func TQuantile(p, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// Interval is a two-sided confidence interval around a mean.
type Interval struct {
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	HalfWidth float64 `json:"half_width"`
}

// Agg summarizes one quantity over repetitions.
type Agg struct {
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	SD     float64   `json:"sd"` // sample standard deviation (n-1); 0 for n = 1
	CI95   *Interval `json:"ci95,omitempty"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
}

// Aggregate returns mean with a 95 % Student-t interval (mean ± t(0.975, n−1)·sd/√n;
// with n = 5 runs t is 2.776, not 1.96), median, min and max. The interval needs two
// values at least; NaN values are an error.
func Aggregate(xs []float64) (Agg, error) {
	if len(xs) == 0 {
		return Agg{}, errors.New("analysis: aggregate of no values")
	}
	s := slices.Clone(xs)
	for _, x := range s {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Agg{}, errors.New("analysis: aggregate of a NaN or infinite value")
		}
	}
	slices.Sort(s)
	n := float64(len(s))
	a := Agg{N: len(s), Min: s[0], Max: s[len(s)-1]}
	for _, x := range s {
		a.Mean += x
	}
	a.Mean /= n
	if len(s)%2 == 1 {
		a.Median = s[len(s)/2]
	} else {
		a.Median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) > 1 {
		var ss float64
		for _, x := range s {
			ss += (x - a.Mean) * (x - a.Mean)
		}
		a.SD = math.Sqrt(ss / (n - 1))
		h := TQuantile(0.975, n-1) * a.SD / math.Sqrt(n)
		a.CI95 = &Interval{Low: a.Mean - h, High: a.Mean + h, HalfWidth: h}
	}
	return a, nil
}
