package model

import (
	"fmt"
	"slices"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/topology"
)

// Split is the model's account of one write, in ms: the forward link RTT(S,L)/2, the
// quorum round trip theta_c(L) and the commit back RTT(S,L)/2 (their sum is the paper's
// RTT(S,L) + theta_c(L)), and Jitter, what the jitter-aware term expects jittered
// links and in-order delivery to add to the three.
type Split struct {
	Forward, Quorum, Back, Jitter float64
}

// PathModel gives the model's split for a write of window w ("before", "after") sent to
// server s while l leads; ok is false when the model has nothing for it. The same
// arguments give the same split.
type PathModel func(w string, s, l int) (m Split, ok bool)

// Paths is the path model of a run on t over plan: before the crash every server is
// live, after it (if crashed is not 0) every server but crashed.
func Paths(t *topology.Topology, plan netem.Plan, crashed int) (PathModel, error) {
	type win struct {
		plain *Analysis
		jit   *JitterTerm
	}
	wins := map[string]win{}
	lives := map[string][]int{"before": t.Servers()}
	if crashed != 0 {
		lives["after"] = slices.DeleteFunc(t.Servers(), func(id int) bool { return id == crashed })
	}
	for name, live := range lives {
		a, err := Analyze(t, live)
		if err != nil {
			return nil, fmt.Errorf("%s the crash: %w", name, err)
		}
		j, err := Jitter(t, live, plan, 0)
		if err != nil {
			return nil, fmt.Errorf("%s the crash: %w", name, err)
		}
		wins[name] = win{a, j}
	}
	return func(w string, s, l int) (Split, bool) {
		m, ok := wins[w]
		if !ok {
			return Split{}, false
		}
		c, ok := m.plain.Candidate(l)
		if !ok {
			return Split{}, false
		}
		half := t.RTT(s, l) / 2
		return Split{Forward: half, Quorum: c.ThetaC, Back: half, Jitter: m.jit.Extra(s, l)}, true
	}, nil
}
