package pole

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/zxid"
)

// The paper's experiment on the simulated network: all five servers start, p5 wins the
// first election (Initial), heartbeats measure the RTTs for 10 s, p5 is killed, the
// survivors' failure detectors call NewElection, and the oracle picks the new leader
// from RTTs the monitors measured, never from the topology directly.
func TestPaperDeployments(t *testing.T) {
	history := score.Oracle{Name: score.History}
	cases := []struct {
		spec, p string
		oracle  score.Oracle
		zxids   map[int]uint64
		want    int   // exact delays: ties fall to the highest id
		jitter  []int // with 2 % jitter, where ties break by fluctuations
	}{
		{spec: "two-dc", oracle: history, want: 4, jitter: []int{4}},
		{spec: "two-dc", oracle: score.Oracle{Name: score.Rotating}, want: 1, jitter: []int{1}},
		{spec: "two-dc", p: "1", oracle: score.Oracle{Name: score.Request}, want: 4, jitter: []int{4}},
		{spec: "two-dc", p: "1", oracle: score.Oracle{Name: score.Latency}, want: 4, jitter: []int{3, 4}},
		{spec: "two-dc", p: "0", oracle: score.Oracle{Name: score.Latency}, want: 2, jitter: []int{1, 2}},
		{spec: "three-dc-dep1", oracle: history, want: 4, jitter: []int{4}},
		{spec: "three-dc-dep1", oracle: score.Oracle{Name: score.Rotating}, want: 1, jitter: []int{1}},
		{spec: "three-dc-dep1", oracle: score.Oracle{Name: score.WorstCase}, want: 3, jitter: []int{2, 3}},
		{spec: "three-dc-dep1", oracle: score.Oracle{Name: score.Consensus}, want: 4, jitter: []int{2, 3, 4}},
		{spec: "three-dc-dep1", p: "0", oracle: score.Oracle{Name: score.Latency}, want: 4, jitter: []int{2, 3, 4}},
		{spec: "three-dc-dep1", p: "1", oracle: score.Oracle{Name: score.Latency}, want: 1, jitter: []int{1}},
		{spec: "three-dc-dep1", p: "1", oracle: score.Oracle{Name: score.WorstCase}, want: 3, jitter: []int{2, 3}},
		{spec: "three-dc-dep1", p: "1", oracle: score.Oracle{Name: score.Request}, want: 1, jitter: []int{1}},
		{spec: "three-dc-dep3", p: "1", oracle: score.Oracle{Name: score.Consensus}, want: 4, jitter: []int{2, 3, 4}},
		{spec: "three-dc-dep3", p: "1", oracle: score.Oracle{Name: score.Latency}, want: 3, jitter: []int{2, 3}},
		// The fattest among the fastest: p2, p3, p4 share latency's 10 ms class at p = 0,
		// and p2 has the longest history.
		{spec: "three-dc-dep1", p: "0", oracle: score.Oracle{Name: score.Combined,
			Combined: []score.Criterion{{Score: score.Latency, Class: 10}, {Score: "zxid"}}},
			zxids: map[int]uint64{1: 0x100000009, 2: 0x100000007, 3: 0x100000005, 4: 0x100000003, 5: 0x100000001}, want: 2, jitter: []int{2}},
		{spec: "three-dc-dep1", oracle: score.Oracle{Name: score.Preference, Preference: []int{5, 3, 1}}, want: 3, jitter: []int{3}},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/p=%s/%s", c.spec, c.p, c.oracle.Name)
		t.Run(name, func(t *testing.T) {
			tp := loadTopology(t, c.spec, c.p)
			o, err := FromConfig(c.oracle)
			if err != nil {
				t.Fatal(err)
			}
			live := []int{1, 2, 3, 4}
			an, err := model.Analyze(tp, live)
			if err != nil {
				t.Fatal(err)
			}
			model, err := an.Elect(c.oracle, 5, c.zxids)
			if err != nil {
				t.Fatal(err)
			}
			if model.Leader != c.want {
				t.Fatalf("the model elects p%d (tied %v), the test expects p%d", model.Leader, model.Tied, c.want)
			}
			for _, jitter := range []float64{0, 0.02} {
				for seed := int64(1); seed <= 3; seed++ {
					s := runPaperScenario(t, tp, o, c.zxids, jitter, seed)
					got, ok := s.agreed()
					if !ok {
						t.Fatalf("jitter %v seed %d: no agreement: %s", jitter, seed, s.describe())
					}
					if jitter == 0 && got != c.want {
						t.Errorf("exact delays seed %d: elected p%d, want p%d: %s", seed, got, c.want, s.describe())
					}
					if jitter > 0 && !slices.Contains(c.jitter, got) {
						t.Errorf("2%% jitter seed %d: elected p%d, want one of %v: %s", seed, got, c.jitter, s.describe())
					}
					checkMeasuredRTTs(t, s, tp, jitter)
					t.Logf("jitter %v seed %d: p%d; %v", jitter, seed, got, s.nodes[got].Status())
				}
			}
		})
	}
}

func loadTopology(t *testing.T, name, p string) *topology.Topology {
	t.Helper()
	sp, err := spec.Load("../experiments/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p != "" {
		if sp, err = sp.With(spec.Setting{Name: "p", Value: p}); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := sp.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// runPaperScenario runs the paper's experiment, 10 s before the crash instead of 60.
// Request rates are the driver's input: each DC's rate spread over its live servers,
// updated when p5 dies. The failure detector takes 1.5 s, so a heartbeat carries the
// new rates to every survivor before it scores (the model assumes rates after the crash).
func runPaperScenario(t *testing.T, tp *topology.Topology, o Oracle, zxids map[int]uint64, jitter float64, seed int64) *sim {
	t.Helper()
	ids := tp.Servers()
	const crashAt = 10 * time.Second
	s := newSim(t, seed, ids, func(id int) Config {
		return DefaultConfig(id, ids, Initial{Leader: 5, Oracle: o}, 10*time.Millisecond)
	})
	s.delay, s.jitter, s.fdTicks = topoDelay(tp), jitter, 150
	for id, r := range tp.ServerRates(ids) {
		s.rate[id] = r
	}
	for _, id := range ids {
		s.zxid[id] = zxid.Zxid(zxids[id])
		s.start(id)
	}
	s.run(crashAt)
	if l, ok := s.agreed(); !ok || l != 5 {
		t.Fatalf("initial election: want p5 everywhere: %s", s.describe())
	}
	s.crash(5)
	for id, r := range tp.ServerRates(s.live()) {
		s.setRate(id, r)
	}
	s.run(crashAt + 3*time.Second)
	return s
}

// checkMeasuredRTTs compares the monitors' means with the topology's RTTs.
func checkMeasuredRTTs(t *testing.T, s *sim, tp *topology.Topology, jitter float64) {
	t.Helper()
	for _, id := range s.live() {
		for _, p := range s.nodes[id].Peers() {
			if p.ID == 5 {
				if p.Alive {
					t.Errorf("p%d still sees the crashed p5 alive", id)
				}
				continue
			}
			want := tp.RTT(id, p.ID)
			tol := 1e-3 // exact delays: nanosecond rounding only
			if jitter > 0 {
				tol = 0.01 + 3*jitter*want/math.Sqrt(float64(p.Samples))
			}
			if !p.Alive || p.Samples < 10 || math.Abs(p.RTT-want) > tol {
				t.Errorf("p%d's view of p%d: %+v, want alive, 10 samples, RTT %.3f±%.3f ms", id, p.ID, p, want, tol)
			}
		}
	}
}
