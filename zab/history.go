package zab

import (
	"fmt"
	"sort"
)

// history is the part of a server's log the core keeps in memory: every
// transaction after base, in zxid order. Everything up to base is committed state
// the core cannot list (a snapshot or a trimmed prefix).
type history struct {
	base Zxid
	ents []Entry
	// arr is the array ents was last allocated in (length 0, its whole capacity):
	// trimming leaves room at its front, which append reuses by moving ents back to
	// the start instead of allocating and copying into a new array (every write
	// trims one entry and appends one, on every server).
	arr []Entry
}

func (h *history) last() Zxid {
	if len(h.ents) == 0 {
		return h.base
	}
	return h.ents[len(h.ents)-1].Zxid
}

// index returns the position of the first entry with zxid > z.
func (h *history) index(z Zxid) int {
	n := len(h.ents)
	if n == 0 || z >= h.ents[n-1].Zxid {
		return n
	}
	// Within an epoch counters are consecutive, so a zxid of the last entry's epoch
	// is found by its distance from it (the leader asks of the newest entries, at
	// every commit); anything else is searched.
	if last := h.ents[n-1].Zxid; z.Epoch() == last.Epoch() {
		if d := int(last.Counter() - z.Counter()); d < n && h.ents[n-1-d].Zxid == z {
			return n - d
		}
	}
	return sort.Search(n, func(i int) bool { return h.ents[i].Zxid > z })
}

// has reports whether z is base or one of the known entries.
func (h *history) has(z Zxid) bool {
	if z == h.base {
		return true
	}
	i := h.index(z)
	return i > 0 && h.ents[i-1].Zxid == z
}

// floor returns the largest known zxid (base included) that is <= z, and false if z < base.
func (h *history) floor(z Zxid) (Zxid, bool) {
	if z < h.base {
		return 0, false
	}
	if i := h.index(z); i > 0 {
		return h.ents[i-1].Zxid, true
	}
	return h.base, true
}

// after returns the known entries after z; z must be base or a known entry.
func (h *history) after(z Zxid) []Entry { return h.ents[h.index(z):] }

// through returns the known entries in (from, to].
func (h *history) through(from, to Zxid) []Entry { return h.ents[h.index(from):h.index(to)] }

// append adds entries that must continue the log.
func (h *history) append(es []Entry) error {
	prev := h.last()
	for _, e := range es {
		if !follows(prev, e.Zxid) {
			return fmt.Errorf("entry %v does not follow %v", e.Zxid, prev)
		}
		prev = e.Zxid
	}
	if len(h.ents)+len(es) > cap(h.ents) && !h.slide(len(es)) {
		// A roomy array, so that trimming frees enough at its front to slide into.
		grown := make([]Entry, len(h.ents), 4*(len(h.ents)+len(es)))
		copy(grown, h.ents)
		h.ents, h.arr = grown, grown[:0]
	}
	h.ents = append(h.ents, es...)
	return nil
}

// slide moves ents to the start of arr if that makes room for need more and frees at
// least as much as it copies; it reports whether it did.
func (h *history) slide(need int) bool {
	off := cap(h.arr) - cap(h.ents)
	if len(h.ents) == 0 || off < len(h.ents) || len(h.ents)+need > cap(h.arr) ||
		&h.arr[:off+1][off] != &h.ents[0] { // ents was set from elsewhere
		return false
	}
	n := copy(h.arr[:len(h.ents)], h.ents)
	clear(h.arr[off : off+n]) // the old places (trim cleared those before them): let their data go
	h.ents = h.arr[:n]
	return true
}

// truncate drops every entry after z; z must be base or a known entry.
func (h *history) truncate(z Zxid) {
	i := h.index(z)
	clear(h.ents[i:]) // let the data go
	h.ents = h.ents[:i]
}

// reset replaces the history by a snapshot at z.
func (h *history) reset(z Zxid) {
	h.base, h.ents = z, nil
}

// trim keeps at most keep entries at or below upto (all later ones stay).
func (h *history) trim(upto Zxid, keep int) {
	n := h.index(upto) - keep
	if n <= 0 {
		return
	}
	h.base = h.ents[n-1].Zxid
	clear(h.ents[:n]) // the array is reused; appends reallocate it, dropping the prefix
	h.ents = h.ents[n:]
}

func (h *history) summary() Summary {
	s := Summary{Last: h.last(), Base: h.base}
	for i, e := range h.ents {
		if i+1 == len(h.ents) || h.ents[i+1].Zxid.Epoch() != e.Zxid.Epoch() {
			s.EpochEnds = append(s.EpochEnds, e.Zxid)
		}
	}
	return s
}

// common returns the largest zxid that both this history (authoritative: it holds
// every committed transaction) and the summarized log r hold, among the zxids this
// history can list (base and later). false means the logs part before base, so the
// peer needs a snapshot.
//
// A log is prefix-closed: two servers holding the same zxid hold the same history
// up to it, and the transactions of one epoch in a log are that epoch leader's
// proposals 1..k. So the answer is the largest of: base, the peer's base and last,
// and for each epoch in the peer's log the largest own zxid of that epoch at or
// below the peer's end of it, whichever both hold.
func (h *history) common(r Summary) (Zxid, bool) {
	var best Zxid
	found := false
	consider := func(z Zxid) {
		if z >= h.base && h.has(z) && r.has(z) && (!found || z > best) {
			best, found = z, true
		}
	}
	consider(h.base)
	consider(r.Base)
	consider(r.Last)
	for _, end := range r.EpochEnds {
		if z, ok := h.floor(end); ok && z.Epoch() == end.Epoch() {
			consider(z)
		}
	}
	return best, found
}

// syncKind is how a sender brings a receiver's log to its own history.
type syncKind uint8

const (
	syncDiff  syncKind = iota + 1 // send the entries after at
	syncTrunc                     // truncate the receiver after at, then send the entries after at
	syncSnap                      // send the state (at the sender's applied zxid), then the entries after it
)

type syncPlan struct {
	kind syncKind
	at   Zxid
}

func (p syncPlan) String() string {
	return fmt.Sprintf("%s@%d.%d", [...]string{"?", "DIFF", "TRUNC", "SNAP"}[p.kind], p.at.Epoch(), p.at.Counter())
}

// plan decides how to bring the summarized log r up to this history; applied is the
// zxid of the sender's state, used when only a snapshot will do.
func (h *history) plan(r Summary, applied Zxid) syncPlan {
	c, ok := h.common(r)
	switch {
	case !ok:
		return syncPlan{syncSnap, applied}
	case c < r.Last:
		return syncPlan{syncTrunc, c}
	default:
		return syncPlan{syncDiff, c}
	}
}
