package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/polebench/polebench/netem"
)

// The statistics of the impairments phase: the delay distribution a netem leaf draws
// from, a Kolmogorov-Smirnov test against it, and the binomial interval of a loss
// count. Times here are in ms unless a name says otherwise.

// planDelays is the exact distribution of the delay a netem leaf with l's delay,
// jitter and distribution gives a packet, in ms, sorted: the kernel's tabledist()
// (net/sched/sch_netem.c) takes table[rnd % 4096] for a uniform 32-bit rnd, so each
// of the TableSize entries is equally likely, and scales it in integers (sigma split
// by NETEM_DIST_SCALE, the remainder's product rounded half away from zero), done
// here the same way. Without a table (uniform) the kernel draws rnd % 2σ uniformly
// in [mu-σ, mu+σ); that is approximated by TableSize evenly spaced points. No
// jitter: one point.
func planDelays(l netem.Link) ([]float64, error) {
	mu, sigma := int64(l.Delay), int64(l.Jitter)
	if sigma == 0 {
		return []float64{float64(mu) / 1e6}, nil
	}
	tab, err := netem.Table(l.Dist)
	if err != nil {
		return nil, err
	}
	out := make([]float64, netem.TableSize)
	for k := range out {
		var ns int64
		if tab == nil {
			ns = mu - sigma + (2*sigma*int64(k)+sigma)/netem.TableSize
		} else {
			t := int64(tab[k])
			x := (sigma % netem.DistScale) * t
			if x >= 0 {
				x += netem.DistScale / 2
			} else {
				x -= netem.DistScale / 2
			}
			ns = x/netem.DistScale + (sigma/netem.DistScale)*t + mu
		}
		out[k] = float64(ns) / 1e6
	}
	slices.Sort(out)
	return out, nil
}

// quantilePoints thins sorted xs to k equally weighted points (its quantiles at
// (i+0.5)/k): the empirical CDF of the result is within 1/k of that of xs.
func quantilePoints(sorted []float64, k int) []float64 {
	if len(sorted) <= k {
		return slices.Clone(sorted)
	}
	out := make([]float64, k)
	for i := range out {
		out[i] = sorted[int((float64(i)+0.5)*float64(len(sorted))/float64(k))]
	}
	return out
}

// ksConv is the Kolmogorov-Smirnov distance between the samples xs and the
// distribution of P + B, P drawn from plan (equally likely points) and B,
// independent of it, from base (equally likely points): sup |F_xs - F_{P+B}|,
// evaluated exactly at every sample (both sides of each step). plan and base must
// be sorted; xs is sorted in place.
func ksConv(xs, plan, base []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	// below[i] counts the pairs (p, b) with p+b < xs[i]; atOrBelow with <=.
	below, atOrBelow := make([]int, n), make([]int, n)
	for _, b := range base {
		lt, le := 0, 0
		for i, x := range xs {
			for lt < len(plan) && plan[lt]+b < x {
				lt++
			}
			for le < len(plan) && plan[le]+b <= x {
				le++
			}
			below[i] += lt
			atOrBelow[i] += le
		}
	}
	total := float64(len(plan) * len(base))
	var d float64
	for i := 0; i < n; {
		j := i
		for j < n && xs[j] == xs[i] {
			j++
		}
		// Just below xs[i] the samples' CDF is i/n; at xs[i], j/n.
		d = max(d, math.Abs(float64(i)/float64(n)-float64(below[i])/total),
			math.Abs(float64(j)/float64(n)-float64(atOrBelow[i])/total))
		i = j
	}
	return d
}

// ksPValue is the asymptotic p-value of a Kolmogorov-Smirnov distance d with
// effective sample size ne (n for one sample, nm/(n+m) for two), with Stephens'
// correction for finite samples (as in Numerical Recipes' probks).
func ksPValue(d float64, ne float64) float64 {
	sq := math.Sqrt(ne)
	lambda := (sq + 0.12 + 0.11/sq) * d
	return kolmogorovQ(lambda)
}

// kolmogorovQ is P(K > lambda) for the Kolmogorov distribution:
// 2 Σ_{j>=1} (-1)^(j-1) exp(-2 j² λ²).
func kolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 {
		return 1
	}
	var sum float64
	sign := 1.0
	for j := 1; j <= 100; j++ {
		term := sign * 2 * math.Exp(-2*float64(j*j)*lambda*lambda)
		sum += term
		if math.Abs(term) < 1e-12 {
			break
		}
		sign = -sign
	}
	return min(max(sum, 0), 1)
}

// binomialInterval is the central interval of a Binomial(n, p) count holding
// probability conf: [lo, hi] with P(X < lo) <= (1-conf)/2 and P(X > hi) <= (1-conf)/2,
// each as large or small as that allows.
func binomialInterval(n int, p, conf float64) (lo, hi int) {
	tail := (1 - conf) / 2
	switch {
	case p <= 0:
		return 0, 0
	case p >= 1:
		return n, n
	}
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	logPMF := func(k int) float64 {
		return lg(float64(n+1)) - lg(float64(k+1)) - lg(float64(n-k+1)) +
			float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
	}
	cdf := 0.0
	lo, hi = 0, n
	loSet := false
	for k := 0; k <= n; k++ {
		next := cdf + math.Exp(logPMF(k)) // P(X <= k)
		if !loSet && next > tail {
			lo, loSet = k, true // P(X < k) = cdf <= tail
		}
		if 1-next <= tail {
			hi = k // P(X > k) <= tail
			break
		}
		cdf = next
	}
	return lo, hi
}

// mean of xs (0 for none).
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// fmtP prints a p-value.
func fmtP(p float64) string {
	if p < 1e-4 {
		return fmt.Sprintf("%.1e", p)
	}
	return fmt.Sprintf("%.4f", p)
}
