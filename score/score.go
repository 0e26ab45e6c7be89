// Package score holds the paper's score formulas (Sec. 2.2, 3.3), the equivalence-class
// rule of combined oracles (Sec. 5) and the oracle configuration: what both pole's
// oracles and the analytic model (package model) compute with.
package score

import (
	"math"
	"sort"
)

// The score formulas of the paper (Sec. 2.2, 3.3), shared by the analytic model and
// by the pole oracles that compute them from measured RTTs. All values are in ms.

// Quorum is the size of a majority of n configured servers: floor(n/2)+1.
func Quorum(n int) int { return n/2 + 1 }

// ThetaC is the consensus latency of a candidate: the Quorum(n)-th smallest value of
// {0 (the candidate itself)} ∪ rtts, where rtts holds the mean RTT from the candidate
// to every other live server and n counts all configured servers. ok is false when
// the candidate cannot reach a quorum.
func ThetaC(rtts []float64, n int) (v float64, ok bool) {
	q := Quorum(n)
	if len(rtts)+1 < q {
		return math.Inf(1), false
	}
	all := append([]float64{0}, rtts...)
	sort.Float64s(all)
	return all[q-1], true
}

// ThetaW is the worst-case request latency of a candidate: ThetaC plus the largest RTT
// to a live server.
func ThetaW(rtts []float64, n int) (float64, bool) {
	c, ok := ThetaC(rtts, n)
	if !ok {
		return c, false
	}
	max := 0.0
	for _, r := range rtts {
		max = math.Max(max, r)
	}
	return c + max, true
}

// ThetaL is the mean request latency of a candidate (Eq. 1): ThetaC plus the RTT from
// each live server to the candidate weighted by that server's request rate.
// rtts[k] and rates[k] describe the same live server; selfRate is the candidate's own
// rate (its requests need no forwarding hop). lambda_T is the sum of all rates given;
// with no load the score is ThetaC.
func ThetaL(rtts, rates []float64, selfRate float64, n int) (float64, bool) {
	c, ok := ThetaC(rtts, n)
	if !ok {
		return c, false
	}
	total, weighted := selfRate, 0.0
	for k, r := range rtts {
		total += rates[k]
		weighted += rates[k] * r
	}
	if total <= 0 {
		return c, true
	}
	return c + weighted/total, true
}

// Class truncates v to the start of its equivalence class of width w (w <= 0: none),
// for combined oracles (Sec. 5). The small slack keeps a value computed as exactly 20
// from landing in [10, 20).
func Class(v, w float64) float64 {
	if w <= 0 {
		return v
	}
	return math.Floor(v/w+1e-9) * w
}
