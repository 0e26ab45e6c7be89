package model_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/spec"
)

// TestOneWayGeneralForm: with one-way delays the model's round trips are the sums of
// the two directions. two-dc with D1->D2 at 5 ms and D2->D1 at 35 ms predicts what a
// symmetric 40 ms RTT predicts, and the plain plan's one-way delays (RTT/2 each way)
// predict what the topology's RTTs do.
func TestOneWayGeneralForm(t *testing.T) {
	s, err := spec.Resolve("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := model.Predict(topo, model.Scenario{InitialLeader: 5})
	if err != nil {
		t.Fatal(err)
	}
	viaPlan, err := model.Predict(topo, model.Scenario{InitialLeader: 5, OneWay: model.PlanOneWay(s.Plan(topo, 1))})
	if err != nil {
		t.Fatal(err)
	}
	same(t, plain, viaPlan, 1e-5)

	asym, err := s.With(spec.Setting{Name: "rtt", Value: "D1-D2=40"})
	if err != nil {
		t.Fatal(err)
	}
	symTopo, err := asym.Topology()
	if err != nil {
		t.Fatal(err)
	}
	sym, err := model.Predict(symTopo, model.Scenario{InitialLeader: 5})
	if err != nil {
		t.Fatal(err)
	}
	dc := func(id int) int { return map[bool]int{true: 1, false: 2}[id <= 2] }
	oneWay := func(from, to int) float64 {
		switch {
		case dc(from) == dc(to):
			return topo.IntraRTT / 2
		case dc(from) == 1:
			return 5
		}
		return 35
	}
	got, err := model.Predict(topo, model.Scenario{InitialLeader: 5, OneWay: oneWay})
	if err != nil {
		t.Fatal(err)
	}
	same(t, sym, got, 1e-9)
}

// same checks that two predictions elect alike and predict the same latencies.
func same(t *testing.T, a, b *model.Prediction, tol float64) {
	t.Helper()
	for i, e := range a.Elections {
		if f := b.Elections[i]; e.Leader != f.Leader {
			t.Errorf("%s: p%d vs p%d", e.Oracle, e.Leader, f.Leader)
		}
	}
	if math.Abs(a.Before.Mean-b.Before.Mean) > tol || math.Abs(a.Before.ThetaC-b.Before.ThetaC) > tol {
		t.Errorf("before: %.6f / %.6f ms vs %.6f / %.6f", a.Before.Mean, a.Before.ThetaC, b.Before.Mean, b.Before.ThetaC)
	}
	for i, c := range a.After.Candidates {
		d := b.After.Candidates[i]
		if math.Abs(c.Mean-d.Mean) > tol || math.Abs(c.ThetaL-d.ThetaL) > tol || math.Abs(c.Worst-d.Worst) > tol {
			t.Errorf("p%d after: %+v vs %+v", c.ID, c, d)
		}
	}
}

func TestNotesFor(t *testing.T) {
	l := netem.Link{From: 1, To: 2, Delay: time.Millisecond, Dist: netem.DistPareto}
	r := netem.Link{From: 2, To: 1, Delay: time.Millisecond, Dist: netem.DistPareto}
	if n := model.NotesFor(netem.Plan{Links: []netem.Link{l, r}}); n != nil {
		t.Errorf("paper's links: notes %q", n)
	}
	l.RateBytesPerSec, l.LossPct = 100e6/8, 1
	p := netem.Plan{Links: []netem.Link{l, r}, Schedules: []netem.LinkSchedule{{From: 2, To: 1, Steps: []netem.Step{{At: time.Second, Link: r}}}}}
	n := strings.Join(model.NotesFor(p), "\n")
	for _, want := range []string{"100 Mbit/s", "lose packets", "schedule"} {
		if !strings.Contains(n, want) {
			t.Errorf("notes %q lack %q", n, want)
		}
	}
}
