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

import "github.com/polebench/polebench/zxid"

// Zxid identifies a transaction: the epoch in the high 32 bits, a counter in the low 32
// (package zxid's, a leaf, so the election, the events and the traces share it).
type Zxid = zxid.Zxid

// Epoch is the broadcast's epoch: a leader's term, the high 32 bits of its zxids. It
// is not the election's epoch (pole.Epoch).
type Epoch = zxid.Epoch

// MakeZxid builds a zxid from an epoch and a counter.
func MakeZxid(epoch Epoch, counter uint32) Zxid { return zxid.Make(epoch, counter) }

// Txn is one transaction as the broadcast carries, logs and commits it. Data is opaque
// here: the replica encodes the state update (package datatree) into it, so broadcast
// and storage never depend on what the application stores.
type Txn struct {
	Zxid Zxid
	Data []byte
}
