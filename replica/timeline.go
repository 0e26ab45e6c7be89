package replica

import (
	"sync"
	"time"
)

// Event is one moment of a node's life, stamped with the wall clock so that events
// of nodes on one host (or one kernel: namespaces, containers) line up.
type Event struct {
	TimeNS int64  `json:"time_ns"` // Unix nanoseconds
	Server int    `json:"server"`
	Kind   string `json:"kind"` // STARTED, LOOKING, ELECTION, ELECTED, FOLLOWING, LEADING, SYNCED, FIRST_COMMIT, RESIGN, FAILED
	Epoch  uint64 `json:"epoch,omitempty"`
	Leader int    `json:"leader,omitempty"`
	Zxid   uint64 `json:"zxid,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Time is the event's wall-clock time.
func (e Event) Time() time.Time { return time.Unix(0, e.TimeNS) }

// Timeline is a node's events in order; safe for concurrent use.
type Timeline struct {
	server int
	mu     sync.Mutex
	events []Event
}

// NewTimeline returns an empty timeline for server id.
func NewTimeline(id int) *Timeline { return &Timeline{server: id} }

// Add stamps e with the current time and appends it.
func (t *Timeline) Add(e Event) {
	e.TimeNS = time.Now().UnixNano()
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
