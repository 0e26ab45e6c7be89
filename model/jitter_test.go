package model

import (
	"math"
	"testing"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/topology"
)

func jitterTopo(t *testing.T, rate float64) *topology.Topology {
	t.Helper()
	// Fig. 5's layout in Deployment 3 with every request at D2 (p = 1).
	topo, err := topology.New(topology.Config{
		DCs: []topology.DC{{Name: "D1", Endpoint: "slac", Servers: []int{4, 5}}, {Name: "D2", Endpoint: "fnal", Servers: []int{2, 3}},
			{Name: "D3", Endpoint: "caltech", Servers: []int{1}}},
		IntraRTT: topology.DefaultIntraRTT,
		Rates:    map[string]float64{"D2": rate},
	})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestJitterTerm(t *testing.T) {
	topo := jitterTopo(t, 1000)
	live := []int{1, 2, 3, 4}
	plain, err := Analyze(topo, live)
	if err != nil {
		t.Fatal(err)
	}
	term := func(pct float64, rate float64) *JitterTerm {
		t.Helper()
		tp := jitterTopo(t, rate)
		j, err := Jitter(tp, live, netem.NewPlan(tp, netem.Options{JitterPct: pct, Seed: 1}), 4000)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}

	// Without jitter the links are their means: the term is the paper's model.
	flat := term(0, 1000)
	for _, l := range live {
		for _, s := range live {
			if e := flat.Extra(s, l); math.Abs(e) > 1e-6 {
				t.Errorf("no jitter: extra for p%d with leader p%d is %.6f ms, want 0", s, l, e)
			}
		}
	}

	// p4's quorum is itself, p1 (9.88 ms) and the faster of p2 and p3 (53.26 ms each):
	// the faster of two jittered round trips is faster than their mean (at 10 req/s,
	// where in-order delivery adds nothing).
	c4, _ := plain.Candidate(4)
	if _, q, _ := term(20, 10).Split(2, 4); q >= c4.ThetaC {
		t.Errorf("20 %% jitter: p4's quorum wait %.2f ms, want below theta_c %.2f (the faster of two)", q, c4.ThetaC)
	}
	// p2's quorum is itself, p3 (0.1 ms) and p4 (53.26 ms): one round trip decides it,
	// and its mean is the plain one within the jitter's sampling.
	c2, _ := plain.Candidate(2)
	if _, q, _ := term(2, 1000).Split(3, 2); math.Abs(q-c2.ThetaC) > 0.01*c2.ThetaC {
		t.Errorf("2 %% jitter: p2's quorum wait %.3f ms, theta_c %.3f: more than 1 %% apart", q, c2.ThetaC)
	}

	// In-order delivery: a link carrying more messages holds more of them behind a
	// slower one, so the forward link from p2 to p4 takes longer at a higher rate.
	slow, fast := term(20, 10), term(20, 20000)
	fs, _, _ := slow.Split(2, 4)
	ff, _, _ := fast.Split(2, 4)
	if ff <= fs {
		t.Errorf("20 %% jitter: forward link %.3f ms at 20,000 req/s, %.3f ms at 10 req/s: want in-order delivery to add", ff, fs)
	}
	if c := c4.LatencyByDC["D2"]; math.Abs(flat.Leading(4).LatencyByDC["D2"]-c) > 1e-6 {
		t.Errorf("no jitter: D2's latency with p4 leading %.3f, plain %.3f", flat.Leading(4).LatencyByDC["D2"], c)
	}
}
