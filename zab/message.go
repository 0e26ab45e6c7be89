package zab

import "fmt"

// MsgType is the kind of a peer message.
type MsgType uint8

// Message types. Recovery: a follower sends FOLLOWERINFO, the leader answers
// LEADERINFO with the new epoch, the follower ACKEPOCHs with a summary of its log.
// A leader behind its quorum FETCHes the missing history from the best member,
// which answers like a leader syncing a follower (TRUNC / SNAP / DIFF) and ends with
// FETCHDONE. The leader then syncs each follower (TRUNC / SNAP / DIFF), sends
// NEWLEADER, counts ACKs, and UPTODATE starts the broadcast: PROPOSAL, ACK, COMMIT,
// REQUEST (a follower forwarding a client write), PING / PONG.
const (
	MsgFollowerInfo MsgType = iota + 1 // Epoch = sender's accepted epoch
	MsgLeaderInfo                      // Epoch = proposed new epoch
	MsgAckEpoch                        // Epoch acked, CurrentEpoch, Fresh, Summary
	MsgFetch                           // Epoch; Summary of the fetching leader's log
	MsgTrunc                           // Epoch; Zxid = keep the log up to and including Zxid
	MsgSnap                            // Epoch; Zxid = state to send; never on the wire: the driver expands it into MsgSnapChunk
	MsgSnapChunk                       // Epoch; Zxid of the state; Seq from 0; Last; Data
	MsgDiff                            // Epoch; Zxid = the zxid just before Entries[0]; Entries
	MsgFetchDone                       // Epoch; Zxid = the source's last zxid
	MsgNewLeader                       // Epoch; Zxid = the leader's last zxid when the follower was synced
	MsgAck                             // Epoch; Zxid = the follower's durable last zxid (cumulative)
	MsgUpToDate                        // Epoch; Zxid = commit point; the follower starts serving
	MsgProposal                        // Epoch; Zxid = the zxid just before Entries[0]; Entries
	MsgCommit                          // Epoch; Zxid = commit point (cumulative)
	MsgRequest                         // Epoch; ReqID; Data: a client write forwarded to the leader
	MsgPing                            // Epoch; Zxid = commit point
	MsgPong                            // Epoch
	msgTypeEnd
)

var msgNames = [...]string{
	MsgFollowerInfo: "FOLLOWERINFO", MsgLeaderInfo: "LEADERINFO", MsgAckEpoch: "ACKEPOCH",
	MsgFetch: "FETCH", MsgTrunc: "TRUNC", MsgSnap: "SNAP", MsgSnapChunk: "SNAPCHUNK",
	MsgDiff: "DIFF", MsgFetchDone: "FETCHDONE", MsgNewLeader: "NEWLEADER", MsgAck: "ACK",
	MsgUpToDate: "UPTODATE", MsgProposal: "PROPOSAL", MsgCommit: "COMMIT",
	MsgRequest: "REQUEST", MsgPing: "PING", MsgPong: "PONG",
}

func (t MsgType) String() string {
	if t > 0 && t < msgTypeEnd {
		return msgNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// Entry is a transaction as the broadcast carries it, tagged with the server whose
// client asked for it and that server's request id, so the origin can answer its
// client when the transaction commits. Tags live in memory only: a log reloaded
// after a restart has Origin 0.
type Entry struct {
	Txn
	Origin int
	ReqID  uint64
}

// Summary describes a log so that a peer can find where two histories part.
// Everything up to Base is committed state (a snapshot or a trimmed prefix); the log
// after Base is known entry by entry, and EpochEnds lists the last zxid of each epoch
// in it, ascending. A log is always a prefix-closed sequence, so these few zxids say
// exactly which transactions it holds.
type Summary struct {
	Last      Zxid
	Base      Zxid
	EpochEnds []Zxid
}

// has reports whether the summarized log holds z, assuming z belongs to a history
// that contains every committed transaction (the sender's).
func (s Summary) has(z Zxid) bool {
	if z <= s.Base {
		return true
	}
	for _, e := range s.EpochEnds {
		if e.Epoch() == z.Epoch() {
			return z <= e
		}
	}
	return false
}

// Message is one peer message; which fields count depends on Type (see the
// constants). Use MarshalBinary / UnmarshalBinary to put it on a wire. The core never
// changes the Entries of a message it sent (the messages of one proposal share them),
// so a simulator's links may carry messages as they are.
type Message struct {
	Type         MsgType
	From, To     int
	Epoch        Epoch
	CurrentEpoch Epoch
	Fresh        bool
	Last         bool
	Zxid         Zxid
	Seq          uint32
	ReqID        uint64
	Summary      Summary
	Entries      []Entry
	Data         []byte
}

func (m Message) String() string {
	s := fmt.Sprintf("%s %d->%d e=%d z=%v", m.Type, m.From, m.To, m.Epoch, m.Zxid)
	if len(m.Entries) > 0 {
		s += fmt.Sprintf(" ents=%d[%v..%v]", len(m.Entries), m.Entries[0].Zxid, m.Entries[len(m.Entries)-1].Zxid)
	}
	if m.Type == MsgSnapChunk {
		s += fmt.Sprintf(" seq=%d last=%v bytes=%d", m.Seq, m.Last, len(m.Data))
	}
	return s
}

// Chunk builds chunk seq of the snapshot a MsgSnap asks for.
func (m Message) Chunk(seq uint32, data []byte, last bool) Message {
	return Message{Type: MsgSnapChunk, From: m.From, To: m.To, Epoch: m.Epoch, Zxid: m.Zxid, Seq: seq, Data: data, Last: last}
}

// follows reports whether b may come right after a in a log: the next counter in
// the same epoch, or the first transaction of a later epoch.
func follows(a, b Zxid) bool {
	if b.Epoch() == a.Epoch() {
		return b.Counter() == a.Counter()+1
	}
	return b.Epoch() > a.Epoch() && b.Counter() == 1
}
