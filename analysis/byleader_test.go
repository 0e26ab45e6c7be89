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
