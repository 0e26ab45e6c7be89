// Package placement is POLE's oracles as a placement policy for a system that can move
// its leader (etcd's MoveLeader): from what a controller observed of the members (who
// answered, how far each trails the leader, the round trips between them), which member
// should lead. The scores are the model's (package model), computed from the measured
// round trips; the choice is the oracle's, among the members it is safe to move to. It
// is pure: the controller (package placement/controller) does the I/O.
package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// Policy names: the system's own choice, a static order, and POLE's single-score oracles.
const (
	None      = "none"     // the system's own election: nothing is moved
	Priority  = "priority" // a static order of members, most preferred first (TiKV's leader_priority, MongoDB's member priority)
	Latency   = score.Latency
	WorstCase = score.WorstCase
	Consensus = score.Consensus
	Request   = score.Request
)

// Names lists the policies.
func Names() []string { return []string{None, Priority, Latency, WorstCase, Consensus, Request} }

// Policy is a placement policy. Priority lists server ids for Priority. Margin is the
// relative improvement of the policy's score a move must bring over the leader's
// (DefaultMargin when 0), so that jitter in the measured round trips does not move
// the leader back and forth between members that score alike.
type Policy struct {
	Name     string
	Priority []int
	Margin   float64
}

// DefaultMargin: a move must improve the score by 5 %.
const DefaultMargin = 0.05

// DefaultMaxLag is how many entries a member may trail the leader's raft index and
// still be moved to: about a second of the paper's 1,000 writes/s.
const DefaultMaxLag = 1000

// Check says whether p is a policy for servers 1..n.
func (p Policy) Check(n int) error {
	if !slices.Contains(Names(), p.Name) {
		return fmt.Errorf("unknown placement policy %q (known: %s)", p.Name, strings.Join(Names(), ", "))
	}
	if p.Name == Priority {
		if err := p.oracle().Check(n); err != nil {
			return fmt.Errorf("placement priority: %w", err)
		}
	} else if len(p.Priority) > 0 {
		return fmt.Errorf("a priority list is given but the placement policy is %s", p.Name)
	}
	if p.Margin < 0 {
		return fmt.Errorf("placement margin %v is negative", p.Margin)
	}
	return nil
}

func (p Policy) oracle() score.Oracle {
	if p.Name == Priority {
		return score.Oracle{Name: score.Preference, Preference: p.Priority}
	}
	return score.Oracle{Name: p.Name}
}

// Member is what the controller observed of one member this round.
type Member struct {
	ID    int
	Up    bool   // it answered
	Index uint64 // its raft index
}

// View is one round's observation: the members, the leader (0: none) and the round
// trips measured between members (ok false where none was measured yet).
type View struct {
	Members []Member
	Leader  int
	RTT     func(a, b int) (ms float64, ok bool)
}

// Decision is a policy's answer for a view.
type Decision struct {
	Policy string `json:"policy"`
	Leader int    `json:"leader"`
	// Choice is the member the policy places the leader on, among the eligible ones
	// (0: none, e.g. no leader or nothing measured); Move says the controller should
	// move the leader there.
	Choice int    `json:"choice"`
	Move   bool   `json:"move"`
	Why    string `json:"why"`
	// Eligible are the members the leader may be moved to: up, and within MaxLag of the
	// leader's index.
	Eligible []int `json:"eligible"`
	// Scores are the model's, per live member, from the measured round trips.
	Scores []model.Candidate `json:"scores,omitempty"`
	// Estimated lists the pairs whose round trip was not measured yet and came from the
	// topology instead ("p1-p4").
	Estimated []string `json:"estimated,omitempty"`
}

// Decide applies p to v on topology t (its DCs, servers and rates). maxLag is how far
// behind the leader's index a member may be and still lead (DefaultMaxLag when 0).
func Decide(t *topology.Topology, p Policy, v View, maxLag uint64) (Decision, error) {
	d := Decision{Policy: p.Name, Leader: v.Leader}
	if err := p.Check(t.N()); err != nil {
		return d, err
	}
	if p.Name == None {
		d.Why = "policy none: the system's own choice"
		return d, nil
	}
	if v.Leader == 0 {
		d.Why = "no leader"
		return d, nil
	}
	live, eligible, why := sortMembers(v, cmp.Or(maxLag, DefaultMaxLag))
	d.Eligible = eligible
	if why != "" {
		d.Why = why
		return d, nil
	}
	a, estimated, err := analyse(t, live, v.RTT)
	if err != nil {
		d.Why = err.Error()
		return d, nil
	}
	d.Scores, d.Estimated = a.Candidates, estimated
	choice, err := elect(a, p, eligible)
	if err != nil {
		return d, err
	}
	d.Choice = choice
	switch {
	case choice == v.Leader:
		d.Why = "the leader is the policy's choice"
	case !better(a, p, choice, v.Leader):
		d.Why = fmt.Sprintf("p%d scores within the margin of the leader", choice)
	case p.Name == Priority:
		d.Move, d.Why = true, fmt.Sprintf("p%d ranks before the leader p%d", choice, v.Leader)
	default:
		d.Move, d.Why = true, fmt.Sprintf("p%d scores better than the leader p%d", choice, v.Leader)
	}
	return d, nil
}

// sortMembers is the members that answered and those of them the leader may move to;
// why is set when there is nothing to decide.
func sortMembers(v View, maxLag uint64) (live, eligible []int, why string) {
	var lead *Member
	for i := range v.Members {
		if m := &v.Members[i]; m.ID == v.Leader && m.Up {
			lead = m
		}
	}
	if lead == nil {
		return nil, nil, fmt.Sprintf("the leader p%d did not answer", v.Leader)
	}
	for _, m := range v.Members {
		if !m.Up {
			continue
		}
		live = append(live, m.ID)
		if m.Index+maxLag >= lead.Index {
			eligible = append(eligible, m.ID)
		}
	}
	slices.Sort(live)
	slices.Sort(eligible)
	return live, eligible, ""
}

// analyse is the model for the live members, with the measured round trips (half each
// way) and the topology's where a pair has none yet.
func analyse(t *topology.Topology, live []int, rtt func(a, b int) (float64, bool)) (*model.Analysis, []string, error) {
	var estimated []string
	for i, a := range live {
		for _, b := range live[i+1:] {
			if _, ok := rtt(a, b); !ok {
				estimated = append(estimated, fmt.Sprintf("p%d-p%d", a, b))
			}
		}
	}
	oneWay := func(a, b int) float64 {
		if ms, ok := rtt(a, b); ok {
			return ms / 2
		}
		return t.RTT(a, b) / 2
	}
	a, err := model.AnalyzeOneWay(t, live, oneWay)
	return a, estimated, err
}

// elect is the policy's choice among the eligible members.
func elect(a *model.Analysis, p Policy, eligible []int) (int, error) {
	among := *a
	among.Candidates = nil
	for _, c := range a.Candidates {
		if slices.Contains(eligible, c.ID) {
			among.Candidates = append(among.Candidates, c)
		}
	}
	if len(among.Candidates) == 0 {
		return 0, nil
	}
	e, err := among.Elect(p.oracle(), 0, nil)
	return e.Leader, err
}

// better says whether choice's score beats the leader's by more than the margin; a
// priority order always moves to a member it ranks higher.
func better(a *model.Analysis, p Policy, choice, leader int) bool {
	c, ok1 := a.Candidate(choice)
	l, ok2 := a.Candidate(leader)
	if p.Name == Priority || !ok1 || !ok2 {
		return true
	}
	margin := cmp.Or(p.Margin, DefaultMargin)
	switch p.Name {
	case Latency:
		return c.ThetaL < l.ThetaL*(1-margin)
	case WorstCase:
		return c.ThetaW < l.ThetaW*(1-margin)
	case Consensus:
		return c.ThetaC < l.ThetaC*(1-margin)
	case Request:
		return c.ThetaR > l.ThetaR*(1+margin)
	}
	return true
}
