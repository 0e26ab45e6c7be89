package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// dep1 is Table 3's Deployment 1 with equal thirds.
func dep1(t *testing.T) *topology.Topology {
	t.Helper()
	c := threeDC()
	c.Rates = map[string]float64{"D1": 1000.0 / 3, "D2": 1000.0 / 3, "D3": 1000.0 / 3}
	tp, err := topology.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestElect(t *testing.T) {
	tp := dep1(t)
	after, err := Analyze(tp, []int{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	noP2, err := Analyze(tp, []int{1, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		a      *Analysis
		o      score.Oracle
		prev   int
		zxids  map[int]uint64
		leader int
		tied   []int
	}{
		{"history equal zxids", after, score.Oracle{Name: score.History}, 5, nil, 4, []int{1, 2, 3, 4}},
		{"history highest zxid", after, score.Oracle{Name: score.History}, 5, map[int]uint64{1: 0x100000009, 2: 0x100000007, 3: 0x100000009}, 3, []int{1, 3}},
		{"history newer epoch wins over counter", after, score.Oracle{Name: score.History}, 5, map[int]uint64{1: 0x1ffffffff, 2: 0x200000000}, 2, nil},
		{"rotating after p5", after, score.Oracle{Name: score.Rotating}, 5, nil, 1, nil},
		{"rotating after p1 skips dead p2", noP2, score.Oracle{Name: score.Rotating}, 1, nil, 3, nil},
		{"rotating after p4 wraps past dead p5", after, score.Oracle{Name: score.Rotating}, 4, nil, 1, nil},
		{"consensus", after, score.Oracle{Name: score.Consensus}, 5, nil, 4, []int{2, 3, 4}},
		{"worst-case", after, score.Oracle{Name: score.WorstCase}, 5, nil, 3, []int{2, 3}},
		{"request: p4 alone in D1, p1 alone in D3", after, score.Oracle{Name: score.Request}, 5, nil, 4, []int{1, 4}},
		{"preference first live", after, score.Oracle{Name: score.Preference, Preference: []int{5, 2, 4}}, 5, nil, 2, nil},
		{"preference none listed live: highest id", after, score.Oracle{Name: score.Preference, Preference: []int{5}}, 5, nil, 4, []int{1, 2, 3, 4}},
		// Sec. 5: latency in 10 ms classes, then highest zxid. p2 and p3 share the
		// 30 ms class, p4 (38.9) too; p1 (96.7) is out. The fattest of them wins.
		{"combined fattest among fastest", after, score.Oracle{Name: score.Combined, Combined: []score.Criterion{{Score: score.Latency, Class: 10}, {Score: "zxid"}}},
			5, map[int]uint64{1: 9, 2: 8, 3: 7, 4: 6}, 2, nil},
		{"combined without classes is latency", after, score.Oracle{Name: score.Combined, Combined: []score.Criterion{{Score: score.Latency}, {Score: "zxid"}}},
			5, map[int]uint64{2: 8, 3: 8}, 3, []int{2, 3}},
		{"combined request then consensus", after, score.Oracle{Name: score.Combined, Combined: []score.Criterion{{Score: score.Request, Class: 100}, {Score: score.Consensus}}},
			5, nil, 4, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tc.a.Elect(tc.o, tc.prev, tc.zxids)
			if err != nil {
				t.Fatal(err)
			}
			if e.Leader != tc.leader || !slices.Equal(e.Tied, tc.tied) || e.Oracle != tc.o.Name {
				t.Errorf("got %+v, want leader p%d tied %v", e, tc.leader, tc.tied)
			}
		})
	}
}

func TestElectErrors(t *testing.T) {
	a, err := Analyze(dep1(t), []int{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		o    score.Oracle
		prev int
		want string
	}{
		{score.Oracle{Name: "fastest"}, 5, `unknown oracle "fastest"`},
		{score.Oracle{Name: score.Rotating}, 0, "previous leader 0"},
		{score.Oracle{Name: score.Preference}, 5, "non-empty preference list"},
		{score.Oracle{Name: score.Preference, Preference: []int{6}}, 5, "server 6, not in 1..5"},
		{score.Oracle{Name: score.Preference, Preference: []int{2, 2}}, 5, "server 2 twice"},
		{score.Oracle{Name: score.Combined, Combined: []score.Criterion{{Score: "age"}}}, 5, `unknown score "age"`},
		{score.Oracle{Name: score.Combined, Combined: []score.Criterion{{Score: score.Latency, Class: -1}}}, 5, "negative"},
		{score.Oracle{Name: score.Latency, Preference: []int{1}}, 5, "the oracle is latency"},
	}
	for _, tc := range tests {
		if _, err := a.Elect(tc.o, tc.prev, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Elect(%+v): %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestAnalyze(t *testing.T) {
	tp := dep1(t)
	for _, tc := range []struct {
		live []int
		want string
	}{
		{[]int{1, 2}, "cannot form a quorum of 3"},
		{[]int{1, 2, 2}, "listed twice"},
		{[]int{1, 2, 7}, "not in 1..5"},
	} {
		if _, err := Analyze(tp, tc.live); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Analyze(%v): %v, want %q", tc.live, err, tc.want)
		}
	}

	// D3's only server p1 is dead: its requests have nowhere to go, so D3 drops out of
	// the per-DC latencies and the mean weighs D1 and D2 only.
	a, err := Analyze(tp, []int{2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := a.Candidate(4)
	if _, ok := c.LatencyByDC["D3"]; ok || len(c.LatencyByDC) != 2 {
		t.Errorf("latency by DC %v, want D1 and D2 only", c.LatencyByDC)
	}
	// theta_c(p4) with live {p2,p3,p4}: {0, 9.88, 9.88} -> 9.88; D1 9.88, D2 19.76.
	if want := (9.88 + 19.76) / 2; c.Mean != want || c.Worst != 19.76 {
		t.Errorf("mean %v worst %v, want %v and 19.76", c.Mean, c.Worst, want)
	}

	// No load anywhere: the mean is the plain mean over DCs, the worst is theta_w.
	cfg := threeDC()
	cfg.Rates = nil
	idle, err := topology.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err = Analyze(idle, []int{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	c, _ = a.Candidate(4)
	if want := (9.88 + 19.76 + 86.94) / 3; c.Mean-want > 1e-9 || want-c.Mean > 1e-9 || c.Worst != c.ThetaW || c.ThetaL != c.ThetaC {
		t.Errorf("idle p4: mean %v (want %v), worst %v theta_w %v, theta_l %v theta_c %v", c.Mean, want, c.Worst, c.ThetaW, c.ThetaL, c.ThetaC)
	}
}

func TestPredictErrors(t *testing.T) {
	if _, err := Predict(dep1(t), Scenario{InitialLeader: 9}); err == nil || !strings.Contains(err.Error(), "initial leader 9") {
		t.Errorf("Predict: %v", err)
	}
	// Three servers in one DC, two in another: killing one still leaves a quorum,
	// but a one-server topology cannot elect after its only server dies.
	one, err := topology.New(topology.Config{DCs: []topology.DC{{Name: "solo", Servers: []int{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Predict(one, Scenario{InitialLeader: 1}); err == nil || !strings.Contains(err.Error(), "after p1 crashes") {
		t.Errorf("Predict: %v", err)
	}
}

func threeDC() topology.Config {
	return topology.Config{
		DCs: []topology.DC{
			{Name: "D1", Endpoint: "caltech", Servers: []int{5, 4}},
			{Name: "D2", Endpoint: "slac", Servers: []int{2, 3}},
			{Name: "D3", Endpoint: "fnal", Servers: []int{1}},
		},
		IntraRTT: topology.DefaultIntraRTT,
		Rates:    map[string]float64{"D1": 300, "D2": 600, "D3": 100},
	}
}
