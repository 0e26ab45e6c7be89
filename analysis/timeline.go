package analysis

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/score"
)

// Sources of a timeline record.
const (
	SourceHarness = "harness"
	SourceNode    = "node"
)

// Record is one line of events.jsonl: a node's event or something the harness did, on
// the run's clock (ms from the start of the load).
type Record struct {
	AtMS float64 `json:"at_ms"`
	event.Event
	Source string `json:"source"` // SourceHarness or SourceNode
	// Fault is the nemesis kind behind a harness KILL or RESTART (crash, kill, restart).
	Fault nemesis.Kind `json:"fault,omitempty"`
	Error string       `json:"error,omitempty"`
}

// At is the record's instant on the run's clock.
func (r Record) At() time.Duration { return time.Duration(r.AtMS * float64(time.Millisecond)) }

// HarnessRecord is what the harness did at at (from the start of the load).
func HarnessRecord(at time.Duration, kind event.Kind, server int, err error) Record {
	r := Record{AtMS: ms(at), Event: event.Event{Kind: kind, Server: server}, Source: SourceHarness}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// FaultRecord is an executed fault: a KILL (for a crash too), a RESTART, a PARTITION
// (links cut) or a HEAL; the nemesis kind is kept beside.
func FaultRecord(e nemesis.Executed) Record {
	kind := event.Restart
	switch {
	case e.Stops():
		kind = event.Kill
	case e.Cuts():
		kind = event.Partition
	case e.Restores():
		kind = event.Heal
	case e.Kind == nemesis.Pause:
		kind = event.Pause
	case e.Kind == nemesis.Resume:
		kind = event.Resume
	case e.Kind == nemesis.SlowDisk:
		kind = event.SlowDisk
	}
	r := HarnessRecord(e.Issued, kind, e.Server, e.Err)
	r.Fault = e.Kind
	return r
}

// Timeline merges harness records with the nodes' events (stamped in wall-clock time)
// into one list ordered by time, on the clock of a load that started at start.
func Timeline(start time.Time, harness []Record, nodes map[int][]event.Event) []Record {
	all := slices.Clone(harness)
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		for _, e := range nodes[id] {
			all = append(all, Record{AtMS: ms(e.Time().Sub(start)), Event: e, Source: SourceNode})
		}
	}
	slices.SortStableFunc(all, func(a, b Record) int {
		switch {
		case a.AtMS < b.AtMS:
			return -1
		case a.AtMS > b.AtMS:
			return 1
		}
		return 0
	})
	return all
}

// WriteEvents writes a timeline as events.jsonl.
func WriteEvents(path string, tl []Record) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, r := range tl {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("analysis: writing %s: %w", path, err)
		}
	}
	return f.Close()
}

// ReadEvents reads an events.jsonl.
func ReadEvents(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	var out []Record
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("analysis: %s:%d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// FindEvents reads a run's instants off its timeline. The crash is the harness KILL the
// nemesis marked as the crash; the new leader is the server whose FIRST_COMMIT comes
// first after it, and its LEADING the last one between the crash and that commit; the
// election zxids are what each server last proposed (ELECTION) between the crash and
// that LEADING, or before the crash if it was still looking then. base carries the fields the timeline does not give (warm-up end, end,
// initial leader).
func FindEvents(tl []Record, base Events) Events {
	ev := base
	crash := -1.0
	for _, r := range tl {
		if r.Source == SourceHarness && r.Fault != "" && r.Error != "" {
			ev.FailedFaults = append(ev.FailedFaults, fmt.Sprintf("%s of p%d at %.1f s: %s", r.Fault, r.Server, r.AtMS/1000, r.Error))
		}
		if crash < 0 && r.Source == SourceHarness && r.Fault == nemesis.Crash && r.Error == "" {
			crash = r.AtMS
		}
	}
	if crash < 0 {
		return ev
	}
	ev.Crash = time.Duration(crash * float64(time.Millisecond))
	var first *Record
	for i := range tl {
		r := &tl[i]
		if r.Source == SourceNode && r.Kind == event.FirstCommit && r.AtMS > crash {
			first = r
			break // the timeline is in time order
		}
	}
	if first == nil {
		return ev
	}
	ev.NewLeader = first.Server
	ev.FirstCommit = first.At()
	leading := -1.0
	for _, r := range tl {
		if r.Source == SourceNode && r.Server == first.Server && r.Kind == event.Leading && r.AtMS > crash && r.AtMS <= first.AtMS {
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
		if r.Source != SourceNode || r.AtMS > crash {
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
		if r.Source == SourceNode && r.Kind == event.Election && r.AtMS > crash && r.AtMS <= leading {
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
	if ev.NewLeader != 0 && crashes {
		if c, ok := pred.After.Candidate(ev.NewLeader); ok {
			out.MS["after"] = map[string]float64{All: c.Mean}
			for dc, v := range c.LatencyByDC {
				if rates[dc] > 0 {
					out.MS["after"][dc] = v
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
