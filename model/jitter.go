package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// The jitter-aware term. The paper's model takes every link at its mean delay. With
// jitter, a write waits for the k-th fastest of several jittered round trips, whose
// expectation is above the k-th smallest mean, and a link delivers in order, so a
// message drawn fast still waits for the slower one sent before it: both grow with
// the jitter, the second with the rate. JitterTerm estimates the expected forward link,
// quorum wait and commit back of a write by running the plan's own links
// (netem.DelayLine: the kernel's table, jitter and order) at the run's message rates,
// with a fixed seed, so it is exact for the links and repeatable. It leaves the
// paper's formulas as they are and says how much of a measured excess the links
// explain.

// messageBytes is the size of the messages the term sends (a 1 kB write and its
// framing); at the paper's rates the window never binds, so it hardly matters.
const messageBytes = 1100

// DefaultJitterSamples is how many messages each link carries in the estimate: the
// mean of 2 % jitter then sits within about 0.02 % of a link's delay.
const DefaultJitterSamples = 20000

// JitterTerm is the jitter-aware model for one set of live servers.
type JitterTerm struct {
	plain *Analysis
	// oneWay: the mean delay of each link (ms) at the rate it carries while a given
	// server leads; quorum: the mean quorum wait of each leader.
	oneWay map[[3]int]float64 // (leader, from, to)
	quorum map[int]float64
}

// Jitter computes the term for the live servers of t under plan p (the run's links:
// delays, jitter, distribution, window) at t's request rates: while l leads, l sends
// every follower a proposal and a commit per write (2 lambda_T), and each follower
// sends l an ACK per write and forwards its own clients' writes (lambda_T + theta_r).
// samples <= 0 takes DefaultJitterSamples.
func Jitter(t *topology.Topology, live []int, p netem.Plan, samples int) (*JitterTerm, error) {
	plain, err := Analyze(t, live)
	if err != nil {
		return nil, err
	}
	if samples <= 0 {
		samples = DefaultJitterSamples
	}
	j := &JitterTerm{plain: plain, oneWay: map[[3]int]float64{}, quorum: map[int]float64{}}
	lambda := t.LambdaT()
	rates := t.ServerRates(plain.Live)
	k := score.Quorum(t.N())
	for _, l := range plain.Live {
		var trips [][]float64 // per follower: round-trip samples
		for _, f := range plain.Live {
			if f == l {
				continue
			}
			out, err := linkDelays(p, l, f, 2*lambda, samples)
			if err != nil {
				return nil, err
			}
			back, err := linkDelays(p, f, l, lambda+rates[f], samples)
			if err != nil {
				return nil, err
			}
			j.oneWay[[3]int{l, l, f}], j.oneWay[[3]int{l, f, l}] = mean(out), mean(back)
			rt := make([]float64, samples)
			for i := range rt {
				// The two directions are independent lines: pair samples far apart.
				rt[i] = out[i] + back[(i+samples/2)%samples]
			}
			trips = append(trips, rt)
		}
		if k < 2 || len(trips) < k-1 {
			continue // the leader alone is a quorum (or there is none): no wait
		}
		sum := 0.0
		row := make([]float64, len(trips))
		for i := range samples {
			for f, rt := range trips {
				row[f] = rt[i]
			}
			slices.Sort(row)
			sum += row[k-2] // the leader itself is the fastest member, at 0
		}
		j.quorum[l] = sum / float64(samples)
	}
	return j, nil
}

// linkDelays sends samples messages from one server to another through the plan's
// DelayLine, Poisson at rate per second, and returns each one's delay in ms.
func linkDelays(p netem.Plan, from, to int, rate float64, samples int) ([]float64, error) {
	line, err := p.DelayLine(from, to)
	if err != nil {
		return nil, fmt.Errorf("jitter term: %w", err)
	}
	rate = max(rate, 1) // an idle link: messages far apart, no ordering wait
	rng := rand.New(rand.NewPCG(uint64(from)<<32|uint64(to), 0x6a09e667f3bcc908))
	sent := time.Unix(0, 0)
	out := make([]float64, samples)
	for i := range out {
		sent = sent.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		_, at := line.Schedule(sent, messageBytes)
		out[i] = float64(at.Sub(sent)) / float64(time.Millisecond)
	}
	return out, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Split is the expected forward link, quorum wait and commit back (ms) of a write
// sent to server s while l leads (0 and 0 for the links when s is l).
func (j *JitterTerm) Split(s, l int) (forward, quorum, back float64) {
	if s != l {
		forward, back = j.oneWay[[3]int{l, s, l}], j.oneWay[[3]int{l, l, s}]
	}
	return forward, j.quorum[l], back
}

// Extra is how much the jittered links add to the plain model's RTT(s, l) + theta_c(l).
func (j *JitterTerm) Extra(s, l int) float64 {
	f, q, b := j.Split(s, l)
	c, _ := j.plain.Candidate(l)
	return f + q + b - j.plain.Topo.RTT(s, l) - c.ThetaC
}

// Leading is the jitter-aware counterpart of a candidate's Leading: each DC's mean
// latency (over its live servers, like the plain model's) and the rate-weighted mean.
func (j *JitterTerm) Leading(l int) Leading {
	c, ok := j.plain.Candidate(l)
	if !ok {
		return Leading{Leader: l}
	}
	out := Leading{Leader: l, LatencyByDC: map[string]float64{}}
	t := j.plain.Topo
	for _, dc := range t.DCs() {
		base, ok := c.LatencyByDC[dc.Name]
		if !ok {
			continue
		}
		extra, n := 0.0, 0
		for _, r := range dc.Servers {
			if j.plain.live(r) {
				extra += j.Extra(r, l)
				n++
			}
		}
		out.LatencyByDC[dc.Name] = base + extra/float64(n)
	}
	out.Mean = weighMean(t, out.LatencyByDC)
	return out
}
