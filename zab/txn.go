// Package zab is the Zab-like atomic broadcast of poled: a pure state machine that
// orders writes as zxids, commits them on a quorum, and recovers after elections.
//
// A Node has no goroutines, sockets, files or clock. Its driver feeds it peer
// messages (Step), clock ticks (Tick), the election's outcome (Elected) and client
// writes (Propose), and carries out what Ready asks: send messages, persist log
// operations, apply committed transactions, report results and events; then Advance:
//
//	for n.HasReady() {
//		rd := n.Ready()
//		send(rd.Messages)      // a MsgSnap: stream the state (ChunkWriter)
//		persist(rd.Persist)    // in order, durably
//		apply(rd.Committed)    // to the state machine, in order
//		answer(rd.Results); record(rd.Events)
//		n.Advance()
//	}
//
// Elections are not here (package pole): a node emits EventLooking when it needs
// one and is told the winner with Elected, which may be a server that is behind.
// Recovery then follows Zab: FOLLOWERINFO / LEADERINFO / ACKEPOCH agree on a new
// epoch with a quorum; the leader learns from that quorum's latest history what it
// lacks (FETCH, answered with DIFF, TRUNC or a chunked SNAP); it brings each
// follower up to date the same way, sends NEWLEADER, and once a quorum ACKed it
// commits that history, sends UPTODATE and serves: PROPOSAL, ACK, COMMIT.
package zab

import "fmt"

// Zxid identifies a transaction: the epoch in the high 32 bits, a counter in the low 32.
type Zxid uint64

// MakeZxid builds a zxid from an epoch and a counter.
func MakeZxid(epoch, counter uint32) Zxid { return Zxid(uint64(epoch)<<32 | uint64(counter)) }

// Epoch is the epoch part of z.
func (z Zxid) Epoch() uint32 { return uint32(z >> 32) }

// Counter is the counter part of z.
func (z Zxid) Counter() uint32 { return uint32(z) }

func (z Zxid) String() string { return fmt.Sprintf("0x%x", uint64(z)) }

// Txn is one transaction as the broadcast carries, logs and commits it. Data is opaque
// here: the replica encodes the state update (package datatree) into it, so broadcast
// and storage never depend on what the application stores.
type Txn struct {
	Zxid Zxid
	Data []byte
}
