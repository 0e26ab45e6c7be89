package analysis

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/record"
)

// Placed is the placement controller's part of a run's instants: its first decision
// after the crash that placed a leader (the Raft winner kept, or a move), and that
// leader's first commit.
type Placed struct {
	// Leader is the server the policy placed the leader on after the crash (0: the
	// controller placed none, or the run has none).
	Leader int
	// Moved is when the controller moved the leadership (0: it kept Raft's winner);
	// Commit is the placed leader's first commit, after Moved when it moved.
	Moved, Commit time.Duration
	// Stops are the controller's stops and starts, as "at T s: why".
	Stops []string
}

// findPlaced reads the placement off the timeline, after a crash at crash (ms) whose
// new leader first committed at first.
func findPlaced(tl []record.Record, crash float64, first *record.Record) Placed {
	var p Placed
	for _, r := range tl {
		if r.Source == record.SourceHarness && (r.Kind == event.PlacementStopped || r.Kind == event.PlacementStarted) {
			p.Stops = append(p.Stops, fmt.Sprintf("%s at %.1f s: %s", placementWord(r.Kind), r.AtMS/1000, firstOf(r.Reason, r.Error)))
		}
	}
	if first == nil {
		return p
	}
	for i, r := range tl {
		if r.Kind != event.Placement || r.AtMS <= crash || r.Server == 0 || r.Error != "" {
			continue
		}
		switch {
		case placementMoved(&tl[i]):
			p.Leader, p.Moved = r.Server, r.At()
			p.Commit = commitAfter(tl[i:], r.Server)
		case r.Server == first.Server && r.Leader == first.Server:
			p.Leader, p.Commit = r.Server, first.At()
		default:
			continue
		}
		return p
	}
	return p
}

func placementWord(k event.Kind) string {
	if k == event.PlacementStopped {
		return "placement stopped"
	}
	return "placement started again"
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// leadingBeforeMove is the last LEADING before a placement controller's first move
// after the crash, if that move came before before (the first commit after the crash).
func leadingBeforeMove(tl []record.Record, crash, before float64) *record.Record {
	var l *record.Record
	for i := range tl {
		r := &tl[i]
		switch {
		case r.AtMS <= crash:
		case r.AtMS >= before:
			return nil
		case r.Source == record.SourceNode && r.Kind == event.Leading:
			l = r
		case r.Kind == event.Placement && placementMoved(r):
			return l
		}
	}
	return nil
}

// placementMoved says whether a PLACEMENT record is a move the controller made.
func placementMoved(r *record.Record) bool {
	var d struct {
		Move bool `json:"move"`
	}
	json.Unmarshal(r.Placement, &d)
	return d.Move && r.Error == ""
}

// commitAfter is server's first FIRST_COMMIT in tl (0: none).
func commitAfter(tl []record.Record, server int) time.Duration {
	for _, r := range tl {
		if r.Source == record.SourceNode && r.Kind == event.FirstCommit && r.Server == server {
			return r.At()
		}
	}
	return 0
}

// placedWindows splits a run whose controller moved the leader: "after" is Raft's
// winner serving until the move (unsettled: the controller moves it at once), and
// "placed" the placed leader from settle after its first commit to the end.
func (e Events) placedWindows(ws []Window, settle, end time.Duration) []Window {
	p := e.Placed
	if p.Moved == 0 {
		return ws
	}
	out := ws[:1] // before
	if e.FirstCommit > 0 && e.FirstCommit < p.Moved {
		out = append(out, Window{"after", e.FirstCommit, p.Moved})
	}
	if from := p.Commit + settle; p.Commit > 0 && from < end {
		out = append(out, Window{"placed", from, end})
	}
	return out
}
