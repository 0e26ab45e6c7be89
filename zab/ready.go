package zab

import (
	"errors"
	"fmt"

	"github.com/polebench/polebench/event"
)

// Ready is what the core asks its driver to do. The driver handles one Ready at a
// time, then calls Advance:
//
//  1. Messages: send them in order (per peer order matters). They do not depend on
//     this Ready's persistence, so they may go out before or while it is written.
//     A MsgSnap asks for this server's state machine as it is now, before this
//     Ready's Persist and Committed take effect (it is then exactly at m.Zxid):
//     the driver streams it to m.To as MsgSnapChunk messages (see
//     ChunkWriter), in place of the MsgSnap, before later messages to m.To.
//  2. Persist: apply the operations in order and make them durable.
//  3. Committed: apply to the state machine in order, after Persist is durable.
//  4. Results and Events: hand to the clients and the event log (stamp the time).
//  5. Advance. Messages that must follow persistence (an ACK after the follower's
//     log holds the transaction, an ACKEPOCH after the epoch is stored) come in a
//     later Ready, after Advance.
//
// The Messages, Persist, Committed and Results slices, and the Persist operations, are
// the core's and valid until the next call to Ready (the core reuses them): keep copies
// of what must outlive that, such as the messages (values) and the transactions.
type Ready struct {
	Messages  []Message
	Persist   []Op
	Committed []Txn
	Results   []Result
	Events    []Event
}

// Empty reports whether there is nothing to do.
func (rd *Ready) Empty() bool {
	return len(rd.Messages) == 0 && len(rd.Persist) == 0 && len(rd.Committed) == 0 &&
		len(rd.Results) == 0 && len(rd.Events) == 0
}

// Op is one persistence operation: *Append, *Truncate, *SnapshotChunk or *SetHardState.
type Op interface{ isOp() }

// Append adds transactions at the end of the log.
type Append struct{ Txns []Txn }

// Truncate drops every logged transaction after Zxid. It never drops a committed one.
type Truncate struct{ After Zxid }

// SnapshotChunk is part of a state snapshot at Zxid received from a peer. Seq 0
// starts a new snapshot (discarding any partial one); the chunk with Last set
// installs it: the state machine becomes the snapshot's state and the log is
// emptied (the next Append continues after Zxid).
type SnapshotChunk struct {
	Zxid Zxid
	Seq  uint32
	Last bool
	Data []byte
}

// SetHardState records the epochs. AcceptedEpoch is the last epoch this server
// promised (ACKEPOCH) not to go below; CurrentEpoch the epoch whose history it holds.
type SetHardState struct{ HardState }

func (*Append) isOp()        {}
func (*Truncate) isOp()      {}
func (*SnapshotChunk) isOp() {}
func (*SetHardState) isOp()  {}

// HardState is the part of the state besides the log that must survive a restart.
type HardState struct {
	AcceptedEpoch Epoch
	CurrentEpoch  Epoch
}

// Persisted is what a restarted server gives New: what its driver persisted.
type Persisted struct {
	HardState
	// Snapshot is the zxid of the state machine the driver restored (0: empty).
	Snapshot Zxid
	// Log holds the logged transactions in order: every one after Snapshot, and
	// optionally some at or before it (they serve DIFFs to lagging peers).
	Log []Txn
}

// Result tells the origin server what became of one of its requests.
type Result struct {
	ReqID uint64
	Zxid  Zxid  // where it committed, when Err is nil
	Err   error // nil: committed and applied; ErrLeaderChanged: outcome unknown
}

// ErrLeaderChanged is the Result of a request still pending when its server left
// the leader it was sent to: it may or may not commit (ZooKeeper's CONNECTIONLOSS).
var ErrLeaderChanged = errors.New("zab: leader changed, outcome unknown")

// ErrNotServing is returned by Propose while the server is not in the broadcast phase.
var ErrNotServing = errors.New("zab: not serving (no synced leader)")

// EventType names a moment of a server's life worth a timestamp.
type EventType uint8

// Event types. Recovery time (Sec. 2.3 of the paper) is FirstCommit - Leading on
// the new leader.
const (
	EventLooking     EventType = iota + 1 // no leader: an election is needed (Reason says why)
	EventFollowing                        // following Leader
	EventLeading                          // this server recognizes itself as leader
	EventSynced                           // leader: a quorum is synced; follower: UPTODATE received
	EventFirstCommit                      // leader: the first transaction of its epoch committed
)

// Kind names the event in the run's vocabulary (events.jsonl, analysis).
func (t EventType) Kind() event.Kind {
	switch t {
	case EventLooking:
		return event.Looking
	case EventFollowing:
		return event.Following
	case EventLeading:
		return event.Leading
	case EventSynced:
		return event.Synced
	case EventFirstCommit:
		return event.FirstCommit
	}
	return event.Kind(fmt.Sprintf("EventType(%d)", uint8(t)))
}

func (t EventType) String() string { return string(t.Kind()) }

// Event is one state change; the driver stamps it with its clock.
type Event struct {
	Type   EventType
	Leader int
	Epoch  Epoch  // the leader's epoch, once known
	Zxid   Zxid   // LEADING: last zxid; SYNCED: commit point; FIRST_COMMIT: its zxid
	Reason string // LOOKING only
	// InitLimit: a LOOKING because recovery outlasted Config.InitTicks, after Waited
	// ticks in which Received bytes of history (snapshot chunks, DIFFs) came in from
	// Leader (a follower's) or the fetch source (a leader's: Leader is that source).
	InitLimit bool
	Waited    int64
	Received  int64
}

func (e Event) String() string {
	s := fmt.Sprintf("%s leader=%d epoch=%d zxid=%v", e.Type, e.Leader, e.Epoch, e.Zxid)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.InitLimit {
		s += fmt.Sprintf(" waited=%d received=%d", e.Waited, e.Received)
	}
	return s
}

// Role is what a server currently is.
type Role uint8

// Roles.
const (
	Looking Role = iota
	Following
	Leading
)

// String is the role as ZooKeeper names a server's state: the kind of the event that
// enters it.
func (r Role) String() string {
	return string([...]event.Kind{event.Looking, event.Following, event.Leading}[r])
}

// Status is a snapshot of the core's state, for the election (LastZxid is the
// history oracle's score) and for monitoring.
type Status struct {
	ID            int
	Role          Role
	Leader        int   // 0 while looking
	Serving       bool  // in the broadcast phase: Propose works
	Epoch         Epoch // the epoch of the leader being followed or led, once known
	AcceptedEpoch Epoch
	CurrentEpoch  Epoch
	LastZxid      Zxid // last transaction in the log
	Committed     Zxid // highest known committed
	Applied       Zxid // highest handed to the state machine
}
