package analysis

import "testing"

// Runs won by different leaders are split by winner, each beside its model; runs with
// one winner are not split.
func TestAggregateByLeader(t *testing.T) {
	run := func(leader int, d1, model float64) *Summary {
		m := model
		return &Summary{NewLeader: leader, LatencyMS: map[string]map[string]LatencyStats{
			"after": {"D1": {Count: 10, Mean: d1, ModelMS: &m}}}}
	}
	r, err := AggregateRuns([]*Summary{run(3, 40, 41.5), run(1, 22, 20.8), run(3, 44, 41.5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ByLeader) != 2 || r.ByLeader[3].Runs != 2 || r.ByLeader[3].MeanLatencyMS["D1"].Mean != 42 ||
		r.ByLeader[3].ModelMS["D1"] != 41.5 || r.ByLeader[1].Runs != 1 || r.ByLeader[1].MeanLatencyMS["D1"].Mean != 22 {
		t.Errorf("by leader: %+v %+v", r.ByLeader[3], r.ByLeader[1])
	}
	if r, err := AggregateRuns([]*Summary{run(3, 40, 41.5), run(3, 44, 41.5)}); err != nil || r.ByLeader != nil {
		t.Errorf("one winner: split %v (%v)", r.ByLeader, err)
	}
}

// Runs whose controller placed different leaders are split by the placed leader in the
// placed window, while the after window stays split by Raft's winner.
func TestAggregateByPlacedLeader(t *testing.T) {
	run := func(raft, placed int, after, inPlaced float64) *Summary {
		s := &Summary{NewLeader: raft, PlacedLeader: placed, LatencyMS: map[string]map[string]LatencyStats{
			"after": {"D1": {Count: 10, Mean: after}}}}
		if inPlaced > 0 {
			s.LatencyMS["placed"] = map[string]LatencyStats{"D1": {Count: 10, Mean: inPlaced}}
		}
		return s
	}
	tests := []struct {
		name   string
		runs   []*Summary
		after  map[int]int     // Raft's winner -> runs in ByLeader
		placed map[int]float64 // placed leader -> mean of the placed window
	}{
		{"one winner, two placed", []*Summary{run(3, 1, 40, 12), run(3, 2, 42, 20), run(3, 1, 44, 14)}, nil, map[int]float64{1: 13, 2: 20}},
		{"two winners, one placed", []*Summary{run(3, 1, 40, 12), run(4, 1, 30, 14)}, map[int]int{3: 1, 4: 1}, nil},
		// A run that kept Raft's winner has no placed window: it is not in the split.
		{"kept and placed", []*Summary{run(1, 1, 11, 0), run(3, 2, 40, 20), run(3, 1, 40, 12)}, map[int]int{1: 1, 3: 2}, map[int]float64{1: 12, 2: 20}},
	}
	for _, tc := range tests {
		r, err := AggregateRuns(tc.runs)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ByLeader) != len(tc.after) {
			t.Errorf("%s: after split %v, want %v", tc.name, r.ByLeader, tc.after)
		}
		for id, n := range tc.after {
			if l := r.ByLeader[id]; l == nil || l.Runs != n {
				t.Errorf("%s: after, p%d: %+v, want %d runs", tc.name, id, l, n)
			}
		}
		if len(r.ByPlacedLeader) != len(tc.placed) {
			t.Errorf("%s: placed split %v, want %v", tc.name, r.ByPlacedLeader, tc.placed)
		}
		for id, mean := range tc.placed {
			if l := r.ByPlacedLeader[id]; l == nil || l.MeanLatencyMS["D1"].Mean != mean {
				t.Errorf("%s: placed, p%d: %+v, want D1 %g ms", tc.name, id, l, mean)
			}
		}
	}
}
