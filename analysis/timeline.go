package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/score"
)

// FindEvents reads a run's instants off its timeline. The crash is the harness KILL the
// nemesis marked as the crash; the new leader is the server whose FIRST_COMMIT comes
// first after it, and its LEADING the last one between the crash and that commit; the
// election zxids are what each server last proposed (ELECTION) between the crash and
// that LEADING, or before the crash if it was still looking then. base carries the fields the timeline does not give (warm-up end, end,
// initial leader).
func FindEvents(tl []record.Record, base Events) Events {
	ev := base
	crash := -1.0
	for _, r := range tl {
		if r.Source == record.SourceHarness && r.Fault != "" && r.Error != "" {
			ev.FailedFaults = append(ev.FailedFaults, fmt.Sprintf("%s of p%d at %.1f s: %s", r.Fault, r.Server, r.AtMS/1000, r.Error))
		}
		if r.Kind == event.Looking && strings.HasPrefix(r.Reason, event.InitLimitPrefix) {
			ev.InitLimits = append(ev.InitLimits, fmt.Sprintf("at %.1f s: %s", r.AtMS/1000, strings.TrimPrefix(r.Reason, event.InitLimitPrefix)))
		}
		if crash < 0 && r.Source == record.SourceHarness && r.Fault == nemesis.Crash && r.Error == "" {
			crash = r.AtMS
		}
	}
	if crash < 0 {
		return ev
	}
	ev.Crash = time.Duration(crash * float64(time.Millisecond))
	var first *record.Record
	for i := range tl {
		r := &tl[i]
		if r.Source == record.SourceNode && r.Kind == event.FirstCommit && r.AtMS > crash {
			first = r
			break // the timeline is in time order
		}
	}
	ev.Placed = findPlaced(tl, crash, first)
	if first == nil {
		return ev
	}
	winner, until := first.Server, first.AtMS
	ev.FirstCommit = first.At()
	if l := leadingBeforeMove(tl, crash, first.AtMS); l != nil && l.Server != first.Server {
		// The controller moved Raft's winner before it committed: the winner is the
		// one Raft elected, and it has no first commit of its own.
		winner, until, ev.FirstCommit = l.Server, l.AtMS, 0
	}
	ev.NewLeader = winner
	leading := -1.0
	for _, r := range tl {
		if r.Source == record.SourceNode && r.Server == winner && r.Kind == event.Leading && r.AtMS > crash && r.AtMS <= until {
			leading = r.AtMS
			ev.Leading = r.At()
			ev.Leadings++
		}
	}
	ev.Elected = ev.Leading
	// A server still LOOKING at the crash (one restarted shortly before it, say) is in
	// that election with the proposal it last made, though it made it before the crash.
	looking := map[int]uint64{}
	for _, r := range tl {
		if r.Source != record.SourceNode || r.AtMS > crash {
			continue
		}
		switch r.Kind {
		case event.Election:
			looking[r.Server] = uint64(r.Zxid)
		case event.Following, event.Leading:
			delete(looking, r.Server)
		}
	}
	for id, z := range looking {
		if ev.ElectionZxids == nil {
			ev.ElectionZxids = map[int]uint64{}
		}
		ev.ElectionZxids[id] = z
	}
	for _, r := range tl {
		if r.Source == record.SourceNode && r.Kind == event.Election && r.AtMS > crash && r.AtMS <= leading {
			if ev.ElectionZxids == nil {
				ev.ElectionZxids = map[int]uint64{}
			}
			ev.ElectionZxids[r.Server] = uint64(r.Zxid)
		}
	}
	return ev
}

// Predicted is the analytic model set beside a run: the mean latency per window
// ("before", "after") and DC (and All), and a note on whom the model elects.
type Predicted struct {
	MS   map[string]map[string]float64
	Note string
}

// Predict picks the model's numbers for a run: before the crash with the initial
// leader, after it with the leader actually elected (so measured and predicted compare
// like with like). DCs without load are left out: they have no measurement to sit
// beside. When history elected another server than the model (which takes the servers
// as in sync), the note says which server was ahead at the crash.
func Predict(pred *model.Prediction, oracle string, rates map[string]float64, ev Events, crashes bool) Predicted {
	out := Predicted{MS: map[string]map[string]float64{"before": {All: pred.Before.Mean}}}
	for dc, v := range pred.Before.LatencyByDC {
		if rates[dc] > 0 {
			out.MS["before"][dc] = v
		}
	}
	for _, e := range pred.Elections {
		if e.Oracle != oracle {
			continue
		}
		out.Note = fmt.Sprintf("model elects p%d with %s", e.Leader, e.Oracle)
		if e.Oracle == score.History && len(ev.ElectionZxids) > 0 {
			if got, err := pred.After.Elect(score.Oracle{Name: score.History}, 0, ev.ElectionZxids); err == nil && got.Leader != e.Leader {
				out.Note += "; " + aheadNote(ev.ElectionZxids, got.Leader)
			}
		}
	}
	if !crashes {
		return out
	}
	// Each window beside the model for the leader it had.
	for w, id := range map[string]int{"after": ev.NewLeader, "placed": ev.Placed.Leader} {
		if c, ok := pred.After.Candidate(id); ok && (w == "after" || ev.Placed.Moved > 0) {
			out.MS[w] = map[string]float64{All: c.Mean}
			for dc, v := range c.LatencyByDC {
				if rates[dc] > 0 {
					out.MS[w][dc] = v
				}
			}
		}
	}
	return out
}

// aheadNote explains a history winner other than the model's: proposals in flight
// when the leader died reach some followers and not others (as with ZooKeeper), and
// the one ahead must win.
func aheadNote(zxids map[int]uint64, winner int) string {
	ids := slices.Sorted(maps.Keys(zxids))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("p%d %#x", id, zxids[id])
	}
	return fmt.Sprintf("p%d was ahead at the crash (%s), so history picks it", winner, strings.Join(parts, ", "))
}

// YClip keeps the crash spike from flattening the steady state in a latency plot:
// three times the slowest predicted DC, at least 100 ms.
func YClip(predicted map[string]map[string]float64) float64 {
	top := 0.0
	for _, dcs := range predicted {
		for _, v := range dcs {
			top = max(top, v)
		}
	}
	return max(100, 3*top)
}
