package placement_test

// An external test, since the spec it reads its layouts from imports placement.

import (
	"strings"
	"testing"

	"github.com/polebench/polebench/model"
	. "github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
)

func topo(t *testing.T, name string, sets ...spec.Setting) *topology.Topology {
	t.Helper()
	sp, err := spec.Resolve(name)
	if err == nil {
		sp, err = sp.With(sets...)
	}
	if err != nil {
		t.Fatal(err)
	}
	tp, err := sp.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// members is every server of tp up at index idx, but for the ids in down (not up) and
// behind (1,000,000 entries back).
func members(tp *topology.Topology, idx uint64, down, behind []int) []Member {
	var ms []Member
	for _, id := range tp.Servers() {
		m := Member{ID: id, Up: true, Index: idx}
		for _, d := range down {
			m.Up = m.Up && d != id
		}
		for _, b := range behind {
			if b == id {
				m.Index = idx - 1_000_000
			}
		}
		ms = append(ms, m)
	}
	return ms
}

// measured is the topology's round trips as if measured, scaled by f.
func measured(tp *topology.Topology, f float64) func(a, b int) (float64, bool) {
	return func(a, b int) (float64, bool) { return tp.RTT(a, b) * f, true }
}

// TestDecide: after the paper's crash (p5 of three-dc-dep1 down, p4 leading as Raft
// elected it), each policy places the leader where the model's oracle does among the
// members it may move to, and holds still where it should.
func TestDecide(t *testing.T) {
	dep1 := topo(t, "three-dc-dep1", spec.Setting{Name: "p", Value: "1"})
	even := topo(t, "three-dc-dep1")
	modelChoice := func(tp *topology.Topology, o string, live []int) int {
		a, err := model.Analyze(tp, live)
		if err != nil {
			t.Fatal(err)
		}
		e, err := a.Elect(score.Oracle{Name: o}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e.Leader
	}
	cases := []struct {
		name     string
		tp       *topology.Topology
		p        Policy
		v        View
		choice   int
		move     bool
		why      string
		estimate bool
	}{
		{"latency, all load in fnal", dep1, Policy{Name: Latency}, View{Members: members(dep1, 5e6, []int{5}, nil), Leader: 4, RTT: measured(dep1, 1)},
			modelChoice(dep1, score.Latency, []int{1, 2, 3, 4}), true, "scores better", false},
		{"worst-case", even, Policy{Name: WorstCase}, View{Members: members(even, 5e6, []int{5}, nil), Leader: 4, RTT: measured(even, 1)},
			modelChoice(even, score.WorstCase, []int{1, 2, 3, 4}), true, "scores better", false},
		{"the leader is the choice", dep1, Policy{Name: Latency}, View{Members: members(dep1, 5e6, []int{5}, nil), Leader: 1, RTT: measured(dep1, 1)},
			1, false, "is the policy's choice", false},
		{"the choice is behind: the next best", dep1, Policy{Name: Latency}, View{Members: members(dep1, 5e6, []int{5}, []int{1}), Leader: 4, RTT: measured(dep1, 1)},
			// slac (p2, p3) is nearer fnal than caltech (p4) is; the two tie, and a tie
			// goes to the higher id, as in the model.
			3, true, "scores better", false},
		{"priority skips a member that is down", dep1, Policy{Name: Priority, Priority: []int{5, 3, 1}}, View{Members: members(dep1, 5e6, []int{5}, nil), Leader: 4, RTT: measured(dep1, 1)},
			3, true, "ranks before", false},
		{"none moves nothing", dep1, Policy{Name: None}, View{Members: members(dep1, 5e6, []int{5}, nil), Leader: 4, RTT: measured(dep1, 1)},
			0, false, "own choice", false},
		{"no leader", dep1, Policy{Name: Latency}, View{Members: members(dep1, 5e6, []int{5}, nil), RTT: measured(dep1, 1)},
			0, false, "no leader", false},
		{"the leader did not answer", dep1, Policy{Name: Latency}, View{Members: members(dep1, 5e6, []int{4, 5}, nil), Leader: 4, RTT: measured(dep1, 1)},
			0, false, "did not answer", false},
		{"round trips not measured yet come from the topology", dep1, Policy{Name: Latency}, View{Members: members(dep1, 5e6, []int{5}, nil), Leader: 4,
			RTT: func(a, b int) (float64, bool) { return 0, false }}, modelChoice(dep1, score.Latency, []int{1, 2, 3, 4}), true, "scores better", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(c.tp, c.p, c.v, 0)
			if err != nil {
				t.Fatal(err)
			}
			if d.Choice != c.choice || d.Move != c.move || !strings.Contains(d.Why, c.why) {
				t.Fatalf("choice p%d move %v (%s), want p%d move %v (%q)", d.Choice, d.Move, d.Why, c.choice, c.move, c.why)
			}
			if (len(d.Estimated) > 0) != c.estimate {
				t.Fatalf("estimated pairs %v", d.Estimated)
			}
		})
	}
}

// TestMargin: round trips a few per cent apart do not move the leader; a clear gain does.
func TestMargin(t *testing.T) {
	tp := topo(t, "two-dc")
	// two-dc: p1-p3 in D1, p4-p5 in D2 (all load split evenly). With every server up and
	// RTTs alike within a DC, two members of one DC score within any margin of each other.
	ms := members(tp, 1000, nil, nil)
	d, err := Decide(tp, Policy{Name: Latency}, View{Members: ms, Leader: 4, RTT: func(a, b int) (float64, bool) {
		r := tp.RTT(a, b)
		if a == 5 || b == 5 {
			r *= 0.98 // p5 a hair faster than p4
		}
		return r, true
	}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Move {
		t.Fatalf("moved to p%d for a 2 %% gain: %s", d.Choice, d.Why)
	}
	d, err = Decide(tp, Policy{Name: Latency, Margin: 0.001}, View{Members: ms, Leader: 4, RTT: func(a, b int) (float64, bool) {
		r := tp.RTT(a, b)
		if a == 5 || b == 5 {
			r *= 0.98
		}
		return r, true
	}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Move || d.Choice != 5 {
		t.Fatalf("with a 0.1 %% margin: choice p%d move %v (%s)", d.Choice, d.Move, d.Why)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Name: "fastest"}, `unknown placement policy "fastest" (known: none, priority, latency, worst-case, consensus, request)`},
		{Policy{Name: Priority, Priority: []int{2, 9}}, "placement priority: preference list names server 9, not in 1..5"},
		{Policy{Name: Priority}, "placement priority: oracle preference needs a non-empty preference list"},
		{Policy{Name: Latency, Priority: []int{1}}, "a priority list is given but the placement policy is latency"},
		{Policy{Name: Latency, Margin: -1}, "placement margin -1 is negative"},
	} {
		err := c.p.Check(5)
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}
