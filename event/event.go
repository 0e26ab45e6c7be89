// Package event is the one vocabulary of what happens in a run: what a replica's
// election and broadcast went through, and what the harness did to the cluster. The
// replica records the first, the nemesis the second, and analysis reads both from
// events.jsonl; the JSON kinds are these constants' values.
package event

import (
	"sync"
	"time"

	"github.com/polebench/polebench/pole"
	"github.com/polebench/polebench/zxid"
)

// Kind is what happened.
type Kind string

// A replica's events.
const (
	Started     Kind = "STARTED"      // the node came up; Zxid is the last one it restored
	Election    Kind = "ELECTION"     // it proposed itself in ElectionEpoch; Zxid is its last zxid
	Elected     Kind = "ELECTED"      // POLE chose Leader in ElectionEpoch
	Resign      Kind = "RESIGN"       // the leader resigned for a better one (Sec. 5)
	Looking     Kind = "LOOKING"      // the broadcast has no leader; Reason says why
	Following   Kind = "FOLLOWING"    // following Leader
	Leading     Kind = "LEADING"      // leading, about to sync a quorum
	Synced      Kind = "SYNCED"       // leader: a quorum is synced; follower: up to date
	FirstCommit Kind = "FIRST_COMMIT" // leader: the first transaction of its epoch committed
	Failed      Kind = "FAILED"       // the node stopped itself (a write to disk failed)
)

// What the harness did.
const (
	Kill       Kind = "KILL"        // a server was killed (Crash says it was the initial leader's crash)
	Restart    Kind = "RESTART"     // a killed server was started again from its data directory
	Serving    Kind = "SERVING"     // a restarted server answers clients again
	Partition  Kind = "PARTITION"   // links were cut (the fault field says which kind: partition, isolate, outdate)
	Heal       Kind = "HEAL"        // cut links were restored (heal, or rejoin of an outdated server)
	Pause      Kind = "PAUSE"       // a server was frozen (SIGSTOP, docker pause): alive, silent
	Resume     Kind = "RESUME"      // a paused server runs again
	SlowDisk   Kind = "SLOW_DISK"   // a server's log writes take longer (Fault says how much; 0 restores)
	LinkChange Kind = "LINK_CHANGE" // a link schedule changed a server's egress links
	LoadStart  Kind = "LOAD_START"
	LoadEnd    Kind = "LOAD_END"
	// The placement controller beside the cluster: a decision (Leader: who led,
	// Server: the policy's choice, Reason: why; the record carries the rest), and the
	// controller stopping (killed, or exited: Reason) and starting again.
	Placement        Kind = "PLACEMENT"
	PlacementStopped Kind = "PLACEMENT_STOPPED"
	PlacementStarted Kind = "PLACEMENT_STARTED"
)

// Event is one moment of a node's life, stamped with the wall clock so that events
// of nodes on one host (or one kernel: namespaces, containers) line up.
//
// A replica has two epochs: the election's (POLE's, counting its elections) and the
// broadcast's (Zab's, a leader's term, the high 32 bits of its zxids). An event
// carries the one of the layer it comes from, in a field of its own.
type Event struct {
	TimeNS int64 `json:"time_ns"` // Unix nanoseconds
	Server int   `json:"server"`
	Kind   Kind  `json:"kind"`
	// ElectionEpoch is the election's epoch: ELECTION, ELECTED, RESIGN.
	ElectionEpoch pole.Epoch `json:"election_epoch,omitempty"`
	// Epoch is the broadcast's epoch: LOOKING, FOLLOWING, LEADING, SYNCED,
	// FIRST_COMMIT (the leader's, once known).
	Epoch  zxid.Epoch `json:"epoch,omitempty"`
	Leader int        `json:"leader,omitempty"`
	Zxid   zxid.Zxid  `json:"zxid,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// InitLimitPrefix starts the Reason of a LOOKING that ends a recovery at its init
// limit (replica.Config.InitLimit): the words after it say who waited for whom, how
// long and what came in.
const InitLimitPrefix = "init limit: "

// Time is the event's wall-clock time.
func (e Event) Time() time.Time { return time.Unix(0, e.TimeNS) }

// Timeline is a node's events in order; safe for concurrent use.
type Timeline struct {
	server int
	now    func() time.Time
	mu     sync.Mutex
	events []Event
}

// NewTimeline returns an empty timeline for server id, stamped by the wall clock.
func NewTimeline(id int) *Timeline { return NewTimelineClock(id, time.Now) }

// NewTimelineClock returns an empty timeline stamped by now (a simulator's clock).
func NewTimelineClock(id int, now func() time.Time) *Timeline {
	return &Timeline{server: id, now: now}
}

// Add stamps e with the current time and appends it.
func (t *Timeline) Add(e Event) {
	e.TimeNS = t.now().UnixNano()
	e.Server = t.server
	t.mu.Lock()
	t.events = append(t.events, e)
	t.mu.Unlock()
}

// Events returns a copy of the events so far.
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}
