package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
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

// JitterTerm is the jitter-aware model for one set of live servers. Each leader's
// share is computed on first use: a run's anatomy asks about the server that led each
// window, not every live one (two leaders' links of nine). Safe for concurrent use.
type JitterTerm struct {
	plain   *Analysis
	plan    netem.Plan
	samples int

	mu      sync.Mutex
	leaders map[int]*leaderTerm
}

// leaderTerm is the term while one server leads: the mean delay of each link (ms) at
// the rate it carries, by (from, to), and the mean quorum wait.
type leaderTerm struct {
	oneWay map[[2]int]float64
	quorum float64
}

// Jitter computes the term for the live servers of t under plan p (the run's links:
// delays, jitter, distribution, window) at t's request rates: while l leads, l sends
// every follower a proposal and a commit per write (2 lambda_T), and each follower
// sends l an ACK per write and forwards its own clients' writes (lambda_T + theta_r).
// samples <= 0 takes DefaultJitterSamples. Every link is checked here; the estimates
// are made when first asked for.
func Jitter(t *topology.Topology, live []int, p netem.Plan, samples int) (*JitterTerm, error) {
	plain, err := Analyze(t, live)
	if err != nil {
		return nil, err
	}
	if samples <= 0 {
		samples = DefaultJitterSamples
	}
	for _, l := range plain.Live {
		for _, f := range plain.Live {
			if f == l {
				continue
			}
			if _, err := p.DelayLine(l, f); err != nil {
				return nil, fmt.Errorf("jitter term: %w", err)
			}
		}
	}
	p.Links = slices.Clone(p.Links) // the estimates made later must see the links checked now
	return &JitterTerm{plain: plain, plan: p, samples: samples, leaders: map[int]*leaderTerm{}}, nil
}

// leader is l's share of the term, computed on first use; a server that is not live
// leads nothing (zero delays, no quorum wait).
func (j *JitterTerm) leader(l int) *leaderTerm {
	j.mu.Lock()
	defer j.mu.Unlock()
	if lt := j.leaders[l]; lt != nil {
		return lt
	}
	lt := &leaderTerm{oneWay: map[[2]int]float64{}}
	if j.plain.live(l) {
		j.estimate(l, lt)
	}
	j.leaders[l] = lt
	return lt
}

// estimate runs l's links; Jitter checked that each one exists.
func (j *JitterTerm) estimate(l int, lt *leaderTerm) {
	t, p, samples := j.plain.Topo, j.plan, j.samples
	lambda := t.LambdaT()
	rates := t.ServerRates(j.plain.Live)
	k := score.Quorum(t.N())
	var trips [][]float64 // per follower: round-trip samples
	for _, f := range j.plain.Live {
		if f == l {
			continue
		}
		out := linkDelays(p, l, f, 2*lambda, samples)
		back := linkDelays(p, f, l, lambda+rates[f], samples)
		lt.oneWay[[2]int{l, f}], lt.oneWay[[2]int{f, l}] = mean(out), mean(back)
		rt := make([]float64, samples)
		for i := range rt {
			// The two directions are independent lines: pair samples far apart.
			rt[i] = out[i] + back[(i+samples/2)%samples]
		}
		trips = append(trips, rt)
	}
	if k < 2 || len(trips) < k-1 {
		return // the leader alone is a quorum (or there is none): no wait
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
	lt.quorum = sum / float64(samples)
}

// linkDelays sends samples messages from one server to another through the plan's
// DelayLine, Poisson at rate per second, and returns each one's delay in ms. The
// line's clock is int64 ns from 0 (time.Unix(0, 0) as it was, without the
// conversions).
func linkDelays(p netem.Plan, from, to int, rate float64, samples int) []float64 {
	line, err := p.DelayLine(from, to)
	if err != nil {
		panic(fmt.Sprintf("jitter term: %v (Jitter checks every link)", err))
	}
	rate = max(rate, 1) // an idle link: messages far apart, no ordering wait
	rng := rand.New(rand.NewPCG(uint64(from)<<32|uint64(to), 0x6a09e667f3bcc908))
	var sent int64
	out := make([]float64, samples)
	for i := range out {
		sent += int64(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		_, at := line.ScheduleNS(sent, messageBytes)
		out[i] = float64(at-sent) / float64(time.Millisecond)
	}
	return out
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
	lt := j.leader(l)
	if s != l {
		forward, back = lt.oneWay[[2]int{s, l}], lt.oneWay[[2]int{l, s}]
	}
	return forward, lt.quorum, back
}

// Extra is how much the jittered links add to the plain model's RTT(s, l) + theta_c(l).
func (j *JitterTerm) Extra(s, l int) float64 {
	f, q, b := j.Split(s, l)
	c, _ := j.plain.Candidate(l)
	return f + q + b - j.plain.RTT(s, l) - c.ThetaC
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
