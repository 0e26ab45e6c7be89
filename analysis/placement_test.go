package analysis

import (
	"reflect"
	"testing"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
)

// The placement's instants and windows: Raft's winner serves until the controller's
// move, the placed leader from settle after its first commit; a controller that kept
// Raft's winner leaves the windows as they were; its stops are reported.
func TestPlacedWindows(t *testing.T) {
	s := func(x float64) float64 { return x * 1000 }
	node := func(at float64, id int, k event.Kind) record.Record {
		return record.Record{AtMS: s(at), Event: event.Event{Server: id, Kind: k}, Source: record.SourceNode}
	}
	placed := func(at float64, leader, choice int, move bool) record.Record {
		r := record.Harness(time.Duration(s(at)*1e6), event.Placement, choice, nil)
		r.Leader, r.Placement = leader, []byte(`{"move":false}`)
		if move {
			r.Placement = []byte(`{"move":true,"moved":"ok"}`)
		}
		return r
	}
	crash := record.Record{AtMS: s(60), Event: event.Event{Server: 5, Kind: event.Kill}, Source: record.SourceHarness, Fault: nemesis.Crash}
	stopped := record.Harness(70*time.Second, event.PlacementStopped, 0, nil)
	stopped.Reason = "killed by faults[1].kill"
	base := []record.Record{placed(10, 5, 1, false), crash, node(60.4, 3, event.Leading), node(60.5, 3, event.FirstCommit)}
	early := []record.Record{crash, node(60.4, 3, event.Leading), placed(60.45, 3, 1, true), node(60.6, 1, event.Leading), node(60.7, 1, event.FirstCommit)}
	tests := []struct {
		name    string
		tl      []record.Record
		want    Placed
		windows []Window
		raft    int // Raft's winner
	}{
		{"moved", append(base, placed(60.6, 3, 1, true), node(60.9, 1, event.Leading), node(61, 1, event.FirstCommit), stopped),
			Placed{Leader: 1, Moved: 60600 * time.Millisecond, Commit: 61 * time.Second, Stops: []string{"placement stopped at 70.0 s: killed by faults[1].kill"}},
			[]Window{{"before", 5 * time.Second, 60 * time.Second}, {"after", 60500 * time.Millisecond, 60600 * time.Millisecond}, {"placed", 71 * time.Second, 120 * time.Second}}, 3},
		{"kept", append(base, placed(60.6, 3, 3, false)),
			Placed{Leader: 3, Commit: 60500 * time.Millisecond},
			[]Window{{"before", 5 * time.Second, 60 * time.Second}, {"after", 70400 * time.Millisecond, 120 * time.Second}}, 3},
		// Moved before Raft's winner committed: the winner is still Raft's.
		{"moved before it served", early, Placed{Leader: 1, Moved: 60450 * time.Millisecond, Commit: 60700 * time.Millisecond},
			[]Window{{"before", 5 * time.Second, 60 * time.Second}, {"placed", 70700 * time.Millisecond, 120 * time.Second}}, 3},
	}
	for _, tc := range tests {
		ev := FindEvents(tc.tl, Events{WarmupEnd: 5 * time.Second, End: 120 * time.Second, InitialLeader: 5})
		if ev.NewLeader != tc.raft {
			t.Errorf("%s: Raft's winner p%d, want p%d", tc.name, ev.NewLeader, tc.raft)
		}
		if !reflect.DeepEqual(ev.Placed, tc.want) {
			t.Errorf("%s: placed %+v, want %+v", tc.name, ev.Placed, tc.want)
		}
		ws, err := ev.Windows(DefaultSettle, 0)
		if err != nil || !reflect.DeepEqual(ws, tc.windows) {
			t.Errorf("%s: windows %v (%v), want %v", tc.name, ws, err, tc.windows)
		}
	}
}
