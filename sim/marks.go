package sim

import (
	"cmp"

	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/zab"
)

// A run keeps only the trace marks an anatomy can read. A follower marks each
// PROPOSAL's arrival and its ACK (trace.PropArrived, trace.Acked), but analysis.Join
// takes those kinds from one follower a write: the one the leader's Quorum mark names.
// Every other follower's are dropped once that mark is made: on 45 servers they were
// 88 of a write's 100-odd marks. What is dropped never depends on when a pass ran: the
// run's last pass drops them all (every Quorum mark is known then), and the passes
// before it drop only some of them.

// markChunk is how many marks a chunk holds: a run's millions of marks are never
// copied to grow one slice.
const markChunk = 1 << 16

func (v *server) mark(m trace.Mark) {
	if n := len(v.marks); n == 0 || len(v.marks[n-1]) == cap(v.marks[n-1]) {
		v.marks = append(v.marks, make([]trace.Mark, 0, cmp.Or(v.s.cfg.markChunk, markChunk)))
		v.s.marksDue = true
	}
	last := &v.marks[len(v.marks)-1]
	*last = append(*last, m)
}

// markCursor is how far the passes have read a server's marks: Quorum marks up to
// chunk, at; chunks before pruned were pruned (each once, before the last pass).
type markCursor struct{ chunk, at, pruned int }

// follower reports whether a mark is a follower's own, kept only for the decider.
func follower(k trace.Kind) bool { return k == trace.PropArrived || k == trace.Acked }

// deciderTable is, for each write's zxid, the server whose ACK completed its quorum
// (the Quorum mark's Peer): by epoch, a slice by counter from the epoch's lowest seen.
// A map's hashing had been most of pruneMarks' instructions; an epoch's counters are
// consecutive, so the slice has no holes to speak of.
type deciderTable struct{ epochs []deciderEpoch }

type deciderEpoch struct {
	epoch uint32
	first uint32  // the counter of by[0]
	by    []int16 // Peer+1; 0: no Quorum mark seen
}

func (t *deciderTable) of(epoch uint32) *deciderEpoch {
	for i := range t.epochs {
		if t.epochs[i].epoch == epoch {
			return &t.epochs[i]
		}
	}
	return nil
}

func (t *deciderTable) set(z zab.Zxid, peer uint8) {
	e, c := t.of(uint32(z.Epoch())), z.Counter()
	if e == nil {
		t.epochs = append(t.epochs, deciderEpoch{epoch: uint32(z.Epoch()), first: c})
		e = &t.epochs[len(t.epochs)-1]
	}
	if c < e.first {
		e.by = append(make([]int16, e.first-c, int(e.first-c)+len(e.by)), e.by...)
		e.first = c
	}
	i := int(c - e.first)
	if i >= len(e.by) {
		e.by = append(e.by, make([]int16, i+1-len(e.by))...)
	}
	e.by[i] = int16(peer) + 1
}

// get is the decider of z, and whether one is known.
func (t *deciderTable) get(z zab.Zxid) (int, bool) {
	e, c := t.of(uint32(z.Epoch())), z.Counter()
	if e == nil || c < e.first || int(c-e.first) >= len(e.by) || e.by[c-e.first] == 0 {
		return 0, false
	}
	return int(e.by[c-e.first]) - 1, true
}

// pruneMarks drops the follower marks of writes another server decided: between events
// (one loop) or windows (window.go) once a chunk filled, each full chunk once, into a
// chunk of the size it keeps; and, final, at the end, from every chunk.
func (s *Sim) pruneMarks(final bool) {
	s.marksDue = false
	if s.cfg.keepMarks {
		return
	}
	for _, v := range s.servers[1:] {
		cur := &v.markCur
		for ; cur.chunk < len(v.marks); cur.chunk, cur.at = cur.chunk+1, 0 {
			c := v.marks[cur.chunk]
			for _, m := range c[cur.at:] {
				if m.Kind == trace.Quorum {
					s.deciders.set(m.Zxid, m.Peer)
				}
			}
			if cur.chunk == len(v.marks)-1 { // the chunk being filled
				cur.at = len(c)
				break
			}
		}
	}
	for _, v := range s.servers[1:] {
		cur := &v.markCur
		upto := len(v.marks) - 1 // the chunk being filled stays
		if final {
			cur.pruned, upto = 0, len(v.marks)
		}
		for ; cur.pruned < upto; cur.pruned++ {
			c := v.marks[cur.pruned]
			kept := c[:0]
			for _, m := range c {
				if follower(m.Kind) {
					if by, ok := s.deciders.get(m.Zxid); ok && by != v.id {
						continue
					}
				}
				kept = append(kept, m)
			}
			if !final {
				kept = append([]trace.Mark(nil), kept...) // the chunk's memory goes
			}
			v.marks[cur.pruned] = kept
		}
	}
}
