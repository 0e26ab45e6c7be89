package pole

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/zxid"
)

// Oracle is a score oracle (Sec. 3): get-score and the order ≺θ over scores.
// Implementations must be pure and deterministic: the same View gives the same Score.
type Oracle interface {
	// Name identifies the oracle in logs and configuration.
	Name() string
	// Score is get-score: this process's score in v.Epoch. ready is false while the
	// oracle lacks the data to score (Sec. 5, first election); the caller then blocks.
	Score(v View) (s Score, ready bool)
	// Less is ≺θ: a ≺θ b, that is b is the better leader. It must be a strict weak
	// order over every score, also malformed ones received from the network.
	Less(a, b Score) bool
	// Gain says by how much b beats a in the oracle's own unit (ms, req/s, zxids,
	// ranks); negative when a is better. Resignation compares it with a margin.
	Gain(a, b Score) float64
}

// View is what an oracle may look at: the state machine's own variables and what its
// heartbeat monitor measured. The node builds it afresh for each get-score.
type View struct {
	Epoch      Epoch // the epoch get-score is asked for (Alg. 1 lines 17, 45)
	Self       int
	Servers    []int // all configured servers (|N|), ascending
	PrevLeader int   // the last leader this process knew, 0 if none yet
	// Exclude is the leader being replaced, left out of Peers: after-crash scores
	// describe the cluster without it (Sec. 2.2, 3.3). 0 when none is excluded.
	Exclude int
	Peers   map[int]PeerView // live peers with a measured RTT, without Self and Exclude
	Rate    float64          // this process's theta_r (req/s), from the driver
	Zxid    zxid.Zxid        // this process's last zxid (theta_z), from the driver
	// Ready is false until the monitor heard from, or gave up on, every peer.
	Ready bool
}

// PeerView is one live peer as the monitor sees it.
type PeerView struct {
	RTT  float64 // mean RTT in ms
	Rate float64 // its theta_r, as carried by its last heartbeat
}

// rttsAndRates lists the peers' RTTs and rates in id order, so sums are deterministic.
func (v View) rttsAndRates() (rtts, rates []float64) {
	ids := make([]int, 0, len(v.Peers))
	for id := range v.Peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rtts = append(rtts, v.Peers[id].RTT)
		rates = append(rates, v.Peers[id].Rate)
	}
	return rtts, rates
}

// cmpLex compares component by component, then by length, so it is a total order on
// any two vectors (NaN never reaches it: the codec rejects it).
func cmpLex(a, b Score) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

func first(s Score) float64 {
	if len(s) == 0 {
		return math.Inf(-1)
	}
	return s[0]
}

// diff is b-a that stays finite-or-zero when both are the same infinity.
func diff(b, a float64) float64 {
	if a == b {
		return 0
	}
	return b - a
}

// highest orders single scores where more is better.
type highest struct{}

func (highest) Less(a, b Score) bool    { return cmpLex(a, b) < 0 }
func (highest) Gain(a, b Score) float64 { return diff(first(b), first(a)) }

// lowest orders single scores where less is better (latencies).
type lowest struct{}

func (lowest) Less(a, b Score) bool    { return cmpLex(b, a) < 0 }
func (lowest) Gain(a, b Score) float64 { return diff(first(a), first(b)) }

// History elects the highest last zxid (theta_z): ZooKeeper's own rule, the fattest
// server. The score is [epoch, counter] of the zxid so it stays exact in float64.
type History struct{ highest }

func (History) Name() string { return "history" }

func (History) Score(v View) (Score, bool) {
	return Score{float64(v.Zxid.Epoch()), float64(v.Zxid.Counter())}, true
}

// class puts zxids in classes of w transactions (w >= 1), as the model does.
func (History) class(s Score, w float64) Score {
	if w < 1 || len(s) != 2 || s[0] < 0 || s[1] < 0 || s[0] >= 1<<32 || s[1] >= 1<<32 {
		return s
	}
	z := (uint64(s[0])<<32 | uint64(s[1])) / uint64(w)
	return Score{float64(z >> 32), float64(z & 0xffffffff)}
}

func (History) Gain(a, b Score) float64 {
	at := func(s Score, i int) float64 {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	return diff(at(b, 0), at(a, 0))*(1<<32) + diff(at(b, 1), at(a, 1))
}

// Rotating is the application-unaware baseline of Sec. 3.3: the round's leader scores 1,
// everybody else 0. The round's leader is the server after the previous leader in id
// order, modulo N (p1 after p5), taken from View.PrevLeader, the leader this process
// knew last. A process that never knew a leader derives it from the epoch, as get-score
// receives it: epoch e's round leader is the ((e-1) mod N)-th server.
type Rotating struct{ highest }

func (Rotating) Name() string { return "rotating" }

func (Rotating) Score(v View) (Score, bool) {
	if roundLeader(v) == v.Self {
		return Score{1}, true
	}
	return Score{0}, true
}

func roundLeader(v View) int {
	if len(v.Servers) == 0 {
		return 0
	}
	if i := slices.Index(v.Servers, v.PrevLeader); i >= 0 {
		return v.Servers[(i+1)%len(v.Servers)]
	}
	if v.Epoch == 0 {
		return v.Servers[0]
	}
	return v.Servers[int((v.Epoch-1)%Epoch(len(v.Servers)))]
}

// Request elects the server receiving the most client requests (highest theta_r).
type Request struct{ highest }

func (Request) Name() string               { return "request" }
func (Request) Score(v View) (Score, bool) { return Score{v.Rate}, true }

// Consensus elects the lowest consensus latency theta_c. A process that cannot reach a
// quorum scores +Inf.
type Consensus struct{ lowest }

func (Consensus) Name() string { return "consensus" }

func (Consensus) Score(v View) (Score, bool) {
	if !v.Ready {
		return nil, false
	}
	rtts, _ := v.rttsAndRates()
	c, _ := score.ThetaC(rtts, len(v.Servers))
	return Score{c}, true
}

// Latency elects the lowest mean request latency theta_l (Eq. 1).
type Latency struct{ lowest }

func (Latency) Name() string { return "latency" }

func (Latency) Score(v View) (Score, bool) {
	if !v.Ready {
		return nil, false
	}
	rtts, rates := v.rttsAndRates()
	l, _ := score.ThetaL(rtts, rates, v.Rate, len(v.Servers))
	return Score{l}, true
}

// WorstCase elects the lowest worst-case request latency theta_w (Eq. 2).
type WorstCase struct{ lowest }

func (WorstCase) Name() string { return "worst-case" }

func (WorstCase) Score(v View) (Score, bool) {
	if !v.Ready {
		return nil, false
	}
	rtts, _ := v.rttsAndRates()
	w, _ := score.ThetaW(rtts, len(v.Servers))
	return Score{w}, true
}

// Preference is a static preference list: earlier servers are better. The score is the
// rank; servers not listed rank after all listed ones (then the id decides).
type Preference struct {
	lowest
	Order []int
}

func (p Preference) Name() string {
	ids := make([]string, len(p.Order))
	for i, id := range p.Order {
		ids[i] = strconv.Itoa(id)
	}
	return "preference:" + strings.Join(ids, ",")
}

func (p Preference) Score(v View) (Score, bool) {
	if i := slices.Index(p.Order, v.Self); i >= 0 {
		return Score{float64(i)}, true
	}
	return Score{float64(len(p.Order))}, true
}

// Part is one oracle of a Combined one. Class > 0 makes scores whose first component
// falls in the same Class-wide bucket (floor(v/Class)) equivalent, so the next part
// decides: latency in 10 ms classes, then history, is "the fattest among the fastest".
type Part struct {
	Oracle Oracle
	Class  float64
}

// Combined orders by its parts in priority order (Sec. 5). The score concatenates the
// parts' scores, each prefixed by its length.
type Combined struct{ Parts []Part }

func (c Combined) Name() string {
	names := make([]string, len(c.Parts))
	for i, p := range c.Parts {
		names[i] = p.Oracle.Name()
		if p.Class > 0 {
			names[i] += "/" + strconv.FormatFloat(p.Class, 'g', -1, 64)
		}
	}
	return "combined:" + strings.Join(names, ",")
}

func (c Combined) Score(v View) (Score, bool) {
	var out Score
	for _, p := range c.Parts {
		s, ok := p.Oracle.Score(v)
		if !ok {
			return nil, false
		}
		out = append(out, float64(len(s)))
		out = append(out, s...)
	}
	return out, true
}

// split undoes Score's concatenation; ok is false for a malformed vector.
func (c Combined) split(s Score) (parts []Score, ok bool) {
	for range c.Parts {
		if len(s) == 0 {
			return nil, false
		}
		n := s[0]
		if n < 0 || n > float64(len(s)-1) || n != math.Trunc(n) {
			return nil, false
		}
		parts = append(parts, s[1:1+int(n)])
		s = s[1+int(n):]
	}
	return parts, len(s) == 0
}

// classer is implemented by oracles whose scores need their own notion of a class
// (History: zxids, not the first component).
type classer interface {
	class(s Score, w float64) Score
}

// class maps s to the start of its equivalence class (score.Class, the model's rule too).
func (p Part) class(s Score) Score {
	if p.Class <= 0 || len(s) == 0 {
		return s
	}
	if c, ok := p.Oracle.(classer); ok {
		return c.class(s, p.Class)
	}
	out := s.clone()
	out[0] = score.Class(out[0], p.Class)
	return out
}

func (c Combined) Less(a, b Score) bool {
	pa, okA := c.split(a)
	pb, okB := c.split(b)
	if !okA || !okB {
		// A malformed score is worse than any well-formed one; among malformed ones
		// the raw vectors decide, which keeps the order total.
		if okA != okB {
			return !okA
		}
		return cmpLex(a, b) < 0
	}
	for i, p := range c.Parts {
		ca, cb := p.class(pa[i]), p.class(pb[i])
		if p.Oracle.Less(ca, cb) {
			return true
		}
		if p.Oracle.Less(cb, ca) {
			return false
		}
	}
	return false
}

func (c Combined) Gain(a, b Score) float64 {
	pa, okA := c.split(a)
	pb, okB := c.split(b)
	if !okA || !okB {
		return 0
	}
	for i, p := range c.Parts {
		ca, cb := p.class(pa[i]), p.class(pb[i])
		if p.Oracle.Less(ca, cb) || p.Oracle.Less(cb, ca) {
			return p.Oracle.Gain(pa[i], pb[i])
		}
	}
	return 0
}

// Initial makes Leader win the very first election (no process knows a leader yet),
// and defers to Oracle afterwards: the harness's "initial leader p5". The score is
// [1 if this process is Leader and knows no previous leader else 0, Oracle's score...].
// In that first election the others' get-score waits (Sec. 5) until they hear of
// Leader: otherwise a quorum that starts before Leader elects one of its own. A
// process that has committed something (zxid above 0) also stops waiting once its
// monitor has heard from or given up on every peer; a fresh one waits for Leader
// however long Leader takes to start (each server preloading 250 MB finishes seconds
// apart from the others, far beyond the monitor's patience).
// A server restarted with no memory of a leader would win again; the broadcast layer
// normally makes it join the existing leader through votes first.
type Initial struct {
	Leader int
	Oracle Oracle
}

func (o Initial) Name() string { return o.Oracle.Name() }

func (o Initial) Score(v View) (Score, bool) {
	if v.PrevLeader == 0 && v.Self != o.Leader && (v.Zxid == 0 || !v.Ready) {
		if _, heard := v.Peers[o.Leader]; !heard {
			return nil, false
		}
	}
	s, ok := o.Oracle.Score(v)
	if !ok {
		return nil, false
	}
	flag := 0.0
	if v.PrevLeader == 0 && v.Self == o.Leader {
		flag = 1
	}
	return append(Score{flag}, s...), true
}

func (o Initial) Less(a, b Score) bool {
	if fa, fb := first(a), first(b); fa != fb {
		return fa < fb
	}
	if len(a) == 0 || len(b) == 0 {
		return len(a) < len(b)
	}
	return o.Oracle.Less(a[1:], b[1:])
}

func (o Initial) Gain(a, b Score) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	return o.Oracle.Gain(a[1:], b[1:])
}

// ParseOracle builds an oracle from its name: history, rotating, request, consensus,
// latency, worst-case, "preference:5,4,3" (best first), or
// "combined:latency/10,history" (parts in priority order, /class optional).
func ParseOracle(s string) (Oracle, error) {
	s = strings.TrimSpace(s)
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case "preference":
		if !hasArg || arg == "" {
			return nil, fmt.Errorf("pole: oracle %q: preference needs a list of ids, e.g. preference:5,4,3", s)
		}
		var order []int
		for _, f := range strings.Split(arg, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || id <= 0 {
				return nil, fmt.Errorf("pole: oracle %q: %q is not a server id", s, f)
			}
			if slices.Contains(order, id) {
				return nil, fmt.Errorf("pole: oracle %q: id %d listed twice", s, id)
			}
			order = append(order, id)
		}
		return Preference{Order: order}, nil
	case "combined":
		if !hasArg || arg == "" {
			return nil, fmt.Errorf("pole: oracle %q: combined needs parts, e.g. combined:latency/10,history", s)
		}
		var c Combined
		for _, f := range strings.Split(arg, ",") {
			pname, class, hasClass := strings.Cut(strings.TrimSpace(f), "/")
			o, err := simpleOracle(pname)
			if err != nil {
				return nil, fmt.Errorf("pole: oracle %q: part %q: %w", s, f, err)
			}
			p := Part{Oracle: o}
			if hasClass {
				p.Class, err = strconv.ParseFloat(class, 64)
				if err != nil || !(p.Class > 0) || math.IsInf(p.Class, 0) {
					return nil, fmt.Errorf("pole: oracle %q: part %q: class %q is not a positive number", s, f, class)
				}
			}
			c.Parts = append(c.Parts, p)
		}
		return c, nil
	}
	if hasArg {
		return nil, fmt.Errorf("pole: oracle %q: %s takes no argument", s, name)
	}
	o, err := simpleOracle(name)
	if err != nil {
		return nil, fmt.Errorf("pole: oracle %q: %w", s, err)
	}
	return o, nil
}

// FromConfig builds the oracle an experiment spec configures. Score names of combined
// criteria are score.ScoreNames ("zxid" is the history score).
func FromConfig(c score.Oracle) (Oracle, error) {
	switch c.Name {
	case score.Preference:
		if len(c.Preference) == 0 {
			return nil, fmt.Errorf("pole: oracle preference: empty preference list")
		}
		return Preference{Order: slices.Clone(c.Preference)}, nil
	case score.Combined:
		if len(c.Combined) == 0 {
			return nil, fmt.Errorf("pole: oracle combined: no criteria")
		}
		var out Combined
		for i, cr := range c.Combined {
			o, err := simpleOracle(cr.Score)
			if err != nil || cr.Score == score.Rotating {
				return nil, fmt.Errorf("pole: oracle combined: criterion %d: unknown score %q", i+1, cr.Score)
			}
			if !(cr.Class >= 0) || math.IsInf(cr.Class, 0) {
				return nil, fmt.Errorf("pole: oracle combined: criterion %d: class %v", i+1, cr.Class)
			}
			out.Parts = append(out.Parts, Part{Oracle: o, Class: cr.Class})
		}
		return out, nil
	}
	o, err := simpleOracle(c.Name)
	if err != nil {
		return nil, fmt.Errorf("pole: %w", err)
	}
	return o, nil
}

func simpleOracle(name string) (Oracle, error) {
	switch name {
	case "history", "zxid":
		return History{}, nil
	case "rotating":
		return Rotating{}, nil
	case "request":
		return Request{}, nil
	case "consensus":
		return Consensus{}, nil
	case "latency":
		return Latency{}, nil
	case "worst-case":
		return WorstCase{}, nil
	}
	return nil, fmt.Errorf("unknown oracle %q (want history, rotating, request, consensus, latency, worst-case, preference:..., combined:...)", name)
}
