// Package model is the paper's analytic model: per candidate leader its scores and the
// predicted request latency of every DC, and whom each oracle elects.
package model

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// The analytic model: given which servers are live, the score of every candidate and
// the request latency the paper predicts if it leads (Sec. 2.2, 3.3). A request that
// arrives at server r with leader l takes RTT(r, l) (forward to the leader and back)
// plus theta_c(l) (the leader's quorum round trip); disk and processing are ignored.

// Leading is the predicted latency, in ms, while one server leads.
type Leading struct {
	Leader int
	// LatencyByDC is the mean latency of a DC's requests: RTT to the leader plus its
	// theta_c, averaged over the DC's live servers (they share the DC's rate equally).
	// DCs without a live server are absent: their requests have nowhere to go.
	LatencyByDC map[string]float64
	// Mean weights the DCs by their rates (equally when no DC has load).
	Mean float64
	// Worst is the slowest live server that receives requests (any live server when
	// none does, which makes it theta_w).
	Worst float64
}

// Candidate is one live server's scores and the latency it would give as leader.
type Candidate struct {
	ID     int
	DC     string
	ThetaC float64 // consensus latency, ms
	ThetaW float64 // worst-case latency, ms
	ThetaL float64 // mean latency (Eq. 1), ms
	ThetaR float64 // request rate arriving at the server, req/s
	Leading
}

// Analysis is the model for one set of live servers.
type Analysis struct {
	Topo       *topology.Topology
	Live       []int       // sorted
	Candidates []Candidate // one per live server, by id

	rtt func(a, b int) float64 // the round trip between two servers, ms
}

// OneWay gives the one-way delay from one server to another in ms.
type OneWay func(from, to int) float64

// roundTrip is the round trip the model's formulas use between a and b. The paper's
// links are symmetric (RTT/2 each way), so its formulas read RTT(r, l); with one-way
// delays every one of them is a message and its answer, d(a->b) + d(b->a): a request
// forwarded from r to the leader l and answered (d(r->l) + d(l->r)), and the leader's
// proposal to r and r's ack (d(l->r) + d(r->l)). The heartbeats that the scores come
// from measure the same round trips.
func roundTrip(t *topology.Topology, oneWay OneWay) func(a, b int) float64 {
	if oneWay == nil {
		return t.RTT
	}
	return func(a, b int) float64 {
		if a == b {
			return 0
		}
		return oneWay(a, b) + oneWay(b, a)
	}
}

// RTT is the round trip the analysis uses between two servers, in ms.
func (a *Analysis) RTT(x, y int) float64 {
	if a.rtt == nil {
		return a.Topo.RTT(x, y)
	}
	return a.rtt(x, y)
}

// Analyze computes every live server's scores and predicted latencies. |N| for the
// quorum counts all configured servers; fewer live servers than a quorum is an error.
func Analyze(t *topology.Topology, live []int) (*Analysis, error) {
	return AnalyzeOneWay(t, live, nil)
}

// AnalyzeOneWay is Analyze with one-way delays per direction (nil: the topology's
// RTTs, RTT/2 each way).
func AnalyzeOneWay(t *topology.Topology, live []int, oneWay OneWay) (*Analysis, error) {
	ids := append([]int(nil), live...)
	sort.Ints(ids)
	for i, id := range ids {
		if id < 1 || id > t.N() {
			return nil, fmt.Errorf("live server %d is not in 1..%d", id, t.N())
		}
		if i > 0 && ids[i-1] == id {
			return nil, fmt.Errorf("live server %d is listed twice", id)
		}
	}
	if q := score.Quorum(t.N()); len(ids) < q {
		return nil, fmt.Errorf("%d live servers cannot form a quorum of %d", len(ids), q)
	}
	a := &Analysis{Topo: t, Live: ids, rtt: roundTrip(t, oneWay)}
	rates := t.ServerRates(ids)
	for _, l := range ids {
		var rtts, others []float64
		for _, r := range ids {
			if r != l {
				rtts = append(rtts, a.rtt(l, r))
				others = append(others, rates[r])
			}
		}
		c := Candidate{ID: l, DC: t.DC(l), ThetaR: rates[l]}
		c.ThetaC, _ = score.ThetaC(rtts, t.N()) // a quorum is live, so every candidate reaches one
		c.ThetaW, _ = score.ThetaW(rtts, t.N())
		c.ThetaL, _ = score.ThetaL(rtts, others, rates[l], t.N())
		c.Leading = a.lead(l, c.ThetaC, rates)
		a.Candidates = append(a.Candidates, c)
	}
	return a, nil
}

func (a *Analysis) lead(l int, thetaC float64, rates map[int]float64) Leading {
	t := a.Topo
	out := Leading{Leader: l, LatencyByDC: map[string]float64{}}
	loaded := false
	for _, dc := range t.DCs() {
		var lat float64
		n := 0
		for _, r := range dc.Servers {
			if !a.live(r) {
				continue
			}
			v := a.rtt(r, l) + thetaC
			lat += v
			n++
			if rates[r] > 0 {
				loaded = true
				out.Worst = math.Max(out.Worst, v)
			}
		}
		if n == 0 {
			continue
		}
		out.LatencyByDC[dc.Name] = lat / float64(n)
	}
	out.Mean = weighMean(t, out.LatencyByDC)
	if !loaded {
		for _, r := range a.Live {
			out.Worst = math.Max(out.Worst, a.rtt(r, l)+thetaC)
		}
	}
	return out
}

// weighMean is the mean of the DCs' latencies weighted by their rates (equally when no
// DC has load).
func weighMean(t *topology.Topology, byDC map[string]float64) float64 {
	var sum, weight, plain float64
	for _, dc := range slices.Sorted(maps.Keys(byDC)) { // one order: the same sum every time
		lat := byDC[dc]
		sum += lat * t.Rates[dc]
		weight += t.Rates[dc]
		plain += lat
	}
	if weight > 0 {
		return sum / weight
	}
	if len(byDC) == 0 {
		return 0
	}
	return plain / float64(len(byDC))
}

func (a *Analysis) live(id int) bool {
	i := sort.SearchInts(a.Live, id)
	return i < len(a.Live) && a.Live[i] == id
}

// Candidate returns the live server id's entry.
func (a *Analysis) Candidate(id int) (Candidate, bool) {
	for _, c := range a.Candidates {
		if c.ID == id {
			return c, true
		}
	}
	return Candidate{}, false
}

// Election is who an oracle elects. Tied lists every server that scored as well as the
// leader (the leader included) when there was a tie, which the highest id broke.
type Election struct {
	Oracle string
	Leader int
	Tied   []int
}

// Elect applies an oracle to the live servers. prev is the leader of the previous
// round (for rotating); zxids gives each server's last zxid (missing ones count as 0,
// so with none every server ties, as when all are in sync).
func (a *Analysis) Elect(o score.Oracle, prev int, zxids map[int]uint64) (Election, error) {
	if err := o.Check(a.Topo.N()); err != nil {
		return Election{}, err
	}
	key, err := a.keyFunc(o, prev, zxids)
	if err != nil {
		return Election{}, err
	}
	// Lower keys are better; candidates are in id order, so the last of the best wins.
	var best []int
	var bestKey []float64
	for _, c := range a.Candidates {
		k := key(c)
		switch cmp := compareKeys(k, bestKey); {
		case best == nil || cmp < 0:
			best, bestKey = []int{c.ID}, k
		case cmp == 0:
			best = append(best, c.ID)
		}
	}
	e := Election{Oracle: o.Name, Leader: best[len(best)-1]}
	if len(best) > 1 {
		e.Tied = best
	}
	return e, nil
}

func (a *Analysis) keyFunc(o score.Oracle, prev int, zxids map[int]uint64) (func(Candidate) []float64, error) {
	n := a.Topo.N()
	switch o.Name {
	case score.History:
		return func(c Candidate) []float64 { return zxidKey(zxids[c.ID], 0) }, nil
	case score.Rotating:
		if prev < 1 || prev > n {
			return nil, fmt.Errorf("rotating: previous leader %d is not in 1..%d", prev, n)
		}
		// Distance after prev going round the ring: the first live one is next, and prev
		// itself (when it is live, e.g. resigning) comes last.
		return func(c Candidate) []float64 {
			d := (c.ID - prev + n) % n
			if d == 0 {
				d = n
			}
			return []float64{float64(d)}
		}, nil
	case score.Request:
		return func(c Candidate) []float64 { return []float64{-c.ThetaR} }, nil
	case score.Consensus:
		return func(c Candidate) []float64 { return []float64{c.ThetaC} }, nil
	case score.Latency:
		return func(c Candidate) []float64 { return []float64{c.ThetaL} }, nil
	case score.WorstCase:
		return func(c Candidate) []float64 { return []float64{c.ThetaW} }, nil
	case score.Preference:
		return func(c Candidate) []float64 {
			for i, id := range o.Preference {
				if id == c.ID {
					return []float64{float64(i)}
				}
			}
			return []float64{float64(len(o.Preference))} // unlisted: after every listed one
		}, nil
	case score.Combined:
		return func(c Candidate) []float64 {
			var k []float64
			for _, cr := range o.Combined {
				switch cr.Score {
				case "zxid":
					k = append(k, zxidKey(zxids[c.ID], cr.Class)...)
				case score.Request:
					k = append(k, -score.Class(c.ThetaR, cr.Class))
				case score.Consensus:
					k = append(k, score.Class(c.ThetaC, cr.Class))
				case score.Latency:
					k = append(k, score.Class(c.ThetaL, cr.Class))
				case score.WorstCase:
					k = append(k, score.Class(c.ThetaW, cr.Class))
				}
			}
			return k
		}, nil
	}
	return nil, fmt.Errorf("unknown oracle %q", o.Name)
}

// zxidKey orders zxids highest first. The two halves keep the comparison exact: a
// float64 cannot hold every uint64.
func zxidKey(z uint64, w float64) []float64 {
	if w >= 1 {
		z /= uint64(w)
	}
	return []float64{-float64(z >> 32), -float64(z & 0xffffffff)}
}

// compareKeys orders keys lexicographically; values within a relative 1e-9 tie, so
// that the same sum taken in another order does not decide an election.
func compareKeys(a, b []float64) int {
	for i := range a {
		if i >= len(b) {
			return 1
		}
		if math.Abs(a[i]-b[i]) <= 1e-9*math.Max(1, math.Max(math.Abs(a[i]), math.Abs(b[i]))) {
			continue
		}
		if a[i] < b[i] {
			return -1
		}
		return 1
	}
	return 0
}

// Scenario is the paper's experiment for the model: the initial leader leads with
// every server live, then crashes and the rest elect a new leader.
type Scenario struct {
	InitialLeader int
	Zxids         map[int]uint64 // for history and combined oracles
	// Oracles to elect with after the crash; nil means every single-score oracle.
	Oracles []score.Oracle
	// OneWay, if set, gives the links' one-way delays (a plan's, per direction);
	// nil means the topology's RTTs, RTT/2 each way.
	OneWay OneWay
	// Notes say where the links make the prediction not apply (NotesFor).
	Notes []string
}

// Prediction is the model's answer for a Scenario.
type Prediction struct {
	Before    Candidate  // the initial leader, all servers live
	After     *Analysis  // the initial leader dead
	Elections []Election // one per oracle of the scenario, in its order
	// Notes say where the prediction does not apply (rate, loss, schedules: NotesFor).
	Notes []string `json:",omitempty"`
}

// SingleScoreOracles are the oracles that need no configuration.
func SingleScoreOracles() []score.Oracle {
	var out []score.Oracle
	for _, n := range []string{score.History, score.Rotating, score.Request, score.Consensus, score.Latency, score.WorstCase} {
		out = append(out, score.Oracle{Name: n})
	}
	return out
}

// Predict runs the model for a scenario.
func Predict(t *topology.Topology, s Scenario) (*Prediction, error) {
	if s.InitialLeader < 1 || s.InitialLeader > t.N() {
		return nil, fmt.Errorf("initial leader %d is not in 1..%d", s.InitialLeader, t.N())
	}
	all, err := AnalyzeOneWay(t, t.Servers(), s.OneWay)
	if err != nil {
		return nil, fmt.Errorf("before the crash: %w", err)
	}
	before, _ := all.Candidate(s.InitialLeader)
	var live []int
	for _, id := range t.Servers() {
		if id != s.InitialLeader {
			live = append(live, id)
		}
	}
	after, err := AnalyzeOneWay(t, live, s.OneWay)
	if err != nil {
		return nil, fmt.Errorf("after %s crashes: %w", topology.Name(s.InitialLeader), err)
	}
	p := &Prediction{Before: before, After: after, Notes: s.Notes}
	oracles := s.Oracles
	if oracles == nil {
		oracles = SingleScoreOracles()
	}
	for _, o := range oracles {
		e, err := after.Elect(o, s.InitialLeader, s.Zxids)
		if err != nil {
			return nil, err
		}
		p.Elections = append(p.Elections, e)
	}
	return p, nil
}
