package replica

import (
	"cmp"
	"slices"
	"time"

	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/zab"
)

// tracer marks the steps of each write that pass through this server (Config.Trace):
// the serving server's, the leader's and a follower's (package trace says which).
// A proposal's arrival at the leader is its own request's (a client write's Submit,
// or the forwarded REQUEST's arrival). Other outputs are stamped with the latest
// arrival among the inputs stepped since the last Ready: the owner steps whatever is
// queued before it drains (poled's group commit), so the deciding ACK or COMMIT is
// one of them, and no phase comes out negative. A nil tracer marks nothing.
type tracer struct {
	id         int
	io         IO
	inAt       time.Duration               // the latest input since the last Ready
	acks       []ackIn                     // the ACKs among them: one of them can complete a quorum
	fresh      bool                        // no input since the last Ready
	reqArrived map[[2]uint64]time.Duration // leader: a forwarded REQUEST (origin, request id) -> its arrival
	submitted  map[uint64]time.Duration    // this server's requests: request id -> Submit
	proposed   zab.Zxid                    // leader: highest zxid marked Proposed
	unacked    []zab.Zxid                  // follower: proposals logged, not yet acked
}

// ackIn is an ACK as the leader stepped it.
type ackIn struct {
	at   time.Duration
	from int
	zxid zab.Zxid // cumulative: it acknowledges everything up to here
	n    int      // its place in the stepping order
	best latest   // the latest among it and those covering more (byCover)
}

type latest struct {
	at   time.Duration
	from int
	n    int
}

// maxUnacked bounds a follower's proposals awaiting their ACK (they only wait for
// their own durability, so a few hundred at most in practice).
const maxUnacked = 1 << 16

func newTracer(id int, io IO) *tracer {
	return &tracer{id: id, io: io, fresh: true, submitted: map[uint64]time.Duration{}, reqArrived: map[[2]uint64]time.Duration{}}
}

func (t *tracer) mark(z zab.Zxid, k trace.Kind, at time.Duration, peer int) {
	t.io.Mark(trace.Mark{Zxid: z, At: int64(at), Kind: k, Peer: uint8(peer)})
}

// input notes what the driver is given next: its arrival.
func (t *tracer) input(at time.Duration) {
	if t == nil {
		return
	}
	if t.fresh || at >= t.inAt {
		t.inAt = at
	}
	t.fresh = false
}

// step notes a broadcast message; a follower marks its proposals' arrival.
func (t *tracer) step(at time.Duration, m zab.Message) {
	if t == nil {
		return
	}
	t.input(at)
	if m.Type == zab.MsgAck && len(t.acks) < maxUnacked {
		t.acks = append(t.acks, ackIn{at: at, from: m.From, zxid: m.Zxid})
	}
	if m.Type == zab.MsgRequest && len(t.reqArrived) < maxUnacked {
		t.reqArrived[[2]uint64{uint64(m.From), m.ReqID}] = at
	}
	if m.Type != zab.MsgProposal {
		return
	}
	for _, e := range m.Entries {
		t.mark(e.Zxid, trace.PropArrived, at, 0)
		if len(t.unacked) < maxUnacked {
			t.unacked = append(t.unacked, e.Zxid)
		}
	}
}

// submit notes one of this server's clients' writes as the loop takes it.
func (t *tracer) submit(req uint64) {
	if t == nil {
		return
	}
	now := t.io.Now()
	t.submitted[req] = now
	t.input(now)
}

// ready marks, as a Ready is handed out, what its messages say (a leader's new
// proposals, a follower's ACK) and a leader's commits of its epoch with the ACK that
// made each: the COMMITs leave before the leader applies, so a follower may hear of a
// commit before the leader's own apply ends.
func (t *tracer) ready(rd zab.Ready, st zab.Status) {
	if t == nil {
		return
	}
	now := t.io.Now()
	if st.Role == zab.Leading && st.Serving && len(rd.Committed) > 0 {
		t.byCover()
		for _, c := range rd.Committed {
			if c.Zxid.Epoch() == st.Epoch {
				at, from := t.quorum(c.Zxid, now)
				t.mark(c.Zxid, trace.Quorum, at, from)
				t.mark(c.Zxid, trace.Committed, now, 0)
			}
		}
	}
	for _, m := range rd.Messages {
		switch m.Type {
		case zab.MsgProposal:
			for _, e := range m.Entries {
				if e.Zxid > t.proposed {
					t.proposed = e.Zxid
					t.mark(e.Zxid, trace.Arrived, t.arrived(e), 0)
					t.mark(e.Zxid, trace.Proposed, now, 0)
				}
			}
		case zab.MsgAck:
			kept := t.unacked[:0]
			for _, z := range t.unacked {
				if z <= m.Zxid {
					t.mark(z, trace.Acked, now, 0)
				} else {
					kept = append(kept, z)
				}
			}
			t.unacked = kept
		}
	}
	t.fresh, t.acks = true, t.acks[:0]
}

// byCover sorts the ACKs stepped since the last Ready by what they cover and gives
// each the latest of itself and those covering more (ties to the one stepped last), so
// that quorum finds a commit's in one search: a group commit can step hundreds of
// ACKs and commit hundreds of writes.
func (t *tracer) byCover() {
	for i := range t.acks {
		t.acks[i].n = i
	}
	slices.SortFunc(t.acks, func(a, b ackIn) int { return cmp.Compare(a.zxid, b.zxid) })
	for i := len(t.acks) - 1; i >= 0; i-- {
		a := &t.acks[i]
		a.best = latest{a.at, a.from, a.n}
		if i+1 < len(t.acks) {
			if b := t.acks[i+1].best; b.at > a.at || b.at == a.at && b.n > a.n {
				a.best = b
			}
		}
	}
}

// quorum is the ACK that completed z's quorum: the latest stepped since the last Ready
// that covers z (byCover has sorted them). A later ACK that does not cover z (a slower
// follower's, for an older proposal) did not make it, and its sender may not have
// acknowledged z yet. Without one, this server's own log completed the quorum, now.
func (t *tracer) quorum(z zab.Zxid, now time.Duration) (time.Duration, int) {
	i, _ := slices.BinarySearchFunc(t.acks, z, func(a ackIn, z zab.Zxid) int { return cmp.Compare(a.zxid, z) })
	if i == len(t.acks) {
		return now, t.id
	}
	return t.acks[i].best.at, t.acks[i].best.from
}

// arrived is when the write a leader proposes as e reached it.
func (t *tracer) arrived(e zab.Entry) time.Duration {
	if e.Origin == t.id {
		if at, ok := t.submitted[e.ReqID]; ok {
			return at
		}
	} else {
		k := [2]uint64{uint64(e.Origin), e.ReqID}
		if at, ok := t.reqArrived[k]; ok {
			delete(t.reqArrived, k)
			return at
		}
	}
	return t.inAt
}

// applied marks, once a Ready's commits are applied, this server's own writes.
func (t *tracer) applied(rd zab.Ready, st zab.Status) {
	if t == nil {
		return
	}
	now := t.io.Now()
	for _, r := range rd.Results {
		sub, ok := t.submitted[r.ReqID]
		if !ok {
			continue
		}
		delete(t.submitted, r.ReqID)
		if r.Err != nil {
			continue
		}
		t.mark(r.Zxid, trace.Submit, sub, 0)
		if st.Role != zab.Leading {
			t.mark(r.Zxid, trace.CommitArrived, t.inAt, 0)
		}
		t.mark(r.Zxid, trace.Applied, now, 0)
	}
	if st.Role == zab.Looking {
		t.unacked = t.unacked[:0]
		clear(t.reqArrived)
	}
}

// failPending forgets the writes that will get no result.
func (t *tracer) failPending() {
	if t != nil {
		clear(t.submitted)
	}
}
