package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/netem"
)

// summary of RTT samples, all in ms.
type summary struct {
	N                         int
	Mean, SD                  float64
	Min, P5, Median, P95, Max float64
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	var ss float64
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	sd := 0.0
	if len(s) > 1 {
		sd = math.Sqrt(ss / float64(len(s)-1))
	}
	return summary{N: len(s), Mean: mean, SD: sd, Min: s[0], Max: s[len(s)-1],
		P5: quantile(s, 0.05), Median: quantile(s, 0.5), P95: quantile(s, 0.95)}
}

// quantile of sorted s, linear between closest ranks.
func quantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// expectRTT is the distribution the plan gives a round trip a->b->a: the two one-way
// delays, each with its jitter drawn as netem does (an entry of the link's table in
// units of the jitter, or uniform in [-jitter, jitter] without a table). Estimated
// from 200000 draws with a fixed seed.
func expectRTT(ab, ba netem.Link) (summary, error) {
	draw := func(l netem.Link) (func(*rand.Rand) float64, error) {
		tab, err := netem.Table(l.Dist)
		if err != nil {
			return nil, err
		}
		d, j := ms(l.Delay), ms(l.Jitter)
		if tab == nil {
			return func(r *rand.Rand) float64 { return d + j*(2*r.Float64()-1) }, nil
		}
		return func(r *rand.Rand) float64 { return d + j*float64(tab[r.IntN(len(tab))])/netem.DistScale }, nil
	}
	f, err := draw(ab)
	if err != nil {
		return summary{}, err
	}
	g, err := draw(ba)
	if err != nil {
		return summary{}, err
	}
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 200000)
	for i := range xs {
		xs[i] = f(r) + g(r)
	}
	return summarize(xs), nil
}

// Thresholds of the checks.
const (
	meanTolerance = 0.05 // |measured mean - plan RTT| / plan RTT
	// With fewer samples the 5 and 95 % quantiles of a Pareto tail wander too far
	// for the shape check below (with 150, a correct Pareto fails it less than once
	// in 10^4 pairs; normal or uniform jitter passes it in well under 1 %).
	minSamples = 100
	// Only jitter this large (sum of both directions) is checked for shape: the
	// intra-DC links' 2 µs is below the VM's own timing noise (docs/performance.md,
	// kernel links in the VM).
	shapeMinJitter = 100 * time.Microsecond
	// For a round trip (two Pareto draws) p95 - median is about 4 times
	// median - p5; for uniform or normal jitter, 1. Ask for clearly more than 1.
	minTailRatio = 1.5
	// The measured 5-95 % spread must be within this factor of the plan's.
	spreadFactor = 2.0
)

// checkMean fails when the measured mean is off the plan's RTT by more than the
// tolerance.
func checkMean(got summary, planRTT float64) error {
	if planRTT <= 0 {
		return fmt.Errorf("plan RTT %.3f ms", planRTT)
	}
	if e := (got.Mean - planRTT) / planRTT; math.Abs(e) > meanTolerance {
		return fmt.Errorf("mean %.3f ms is %+.1f%% off the plan's %.3f ms (tolerance %.0f%%)",
			got.Mean, 100*e, planRTT, 100*meanTolerance)
	}
	return nil
}

// checkShape fails unless the samples look like the expected jitter: median below
// the mean, a longer tail above the median than below it, and a 5-95 % spread of the
// expected width.
func checkShape(got, want summary) error {
	var errs []string
	if !(got.Median < got.Mean) {
		errs = append(errs, fmt.Sprintf("median %.3f ms not below mean %.3f ms", got.Median, got.Mean))
	}
	up, down := got.P95-got.Median, got.Median-got.P5
	if !(up > minTailRatio*down) {
		errs = append(errs, fmt.Sprintf("upper tail p95-median %.3f ms not %.1fx the lower median-p5 %.3f ms", up, minTailRatio, down))
	}
	gs, ws := got.P95-got.P5, want.P95-want.P5
	if !(gs >= ws/spreadFactor && gs <= ws*spreadFactor) {
		errs = append(errs, fmt.Sprintf("5-95%% spread %.3f ms, plan's %.3f ms (allowed factor %.0f)", gs, ws, spreadFactor))
	}
	if len(errs) > 0 {
		return fmt.Errorf("jitter shape: %s", strings.Join(errs, "; "))
	}
	return nil
}
