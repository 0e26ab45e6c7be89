// Package record holds the run's timeline as the executors produce it: a node's event
// or something the harness did, on the run's clock, and events.jsonl, its file. It is a
// leaf beside event and trace, so that the producers (the simulator, the runner) and the
// consumer (analysis) each import it and not one another.
package record

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
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
	// Placement is a PLACEMENT's decision as the controller reported it (its
	// scores, the eligible members, the move's outcome), kept verbatim.
	Placement json.RawMessage `json:"placement,omitempty"`
}

// At is the record's instant on the run's clock.
func (r Record) At() time.Duration { return time.Duration(r.AtMS * float64(time.Millisecond)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Harness is what the harness did at at (from the start of the load).
func Harness(at time.Duration, kind event.Kind, server int, err error) Record {
	r := Record{AtMS: ms(at), Event: event.Event{Kind: kind, Server: server}, Source: SourceHarness}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// Fault is an executed fault: a KILL (for a crash too), a RESTART, a PARTITION (links
// cut) or a HEAL; the nemesis kind is kept beside.
func Fault(e nemesis.Executed) Record {
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
	r := Harness(e.Issued, kind, e.Server, e.Err)
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
		return fmt.Errorf("record: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, r := range tl {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("record: writing %s: %w", path, err)
		}
	}
	return f.Close()
}

// ReadEvents reads an events.jsonl.
func ReadEvents(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	var out []Record
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("record: %s:%d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}
