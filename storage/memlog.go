package storage

import (
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/polebench/polebench/zab"
)

// MemLog is a Log in memory for the simulator and tests. It tracks which
// entries were synced, so Crash can drop the rest like a killed process.
type MemLog struct {
	mu      sync.Mutex
	entries []zab.Txn
	synced  int // entries[:synced] survive Crash
	closed  bool
}

var _ Log = (*MemLog)(nil)

// NewMemLog returns an empty in-memory log.
func NewMemLog() *MemLog { return &MemLog{} }

// Append implements Log. It keeps the txns' data without copying (the simulator
// appends every write on every server): the caller must not modify it afterwards,
// which zab's Readies never do (the core's history holds the same slices).
func (m *MemLog) Append(txns ...zab.Txn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	prev := m.last()
	for _, t := range txns {
		if t.Zxid <= prev {
			return fmt.Errorf("%w: %v after %v", ErrOutOfOrder, t.Zxid, prev)
		}
		if len(t.Data) > MaxRecordData {
			return fmt.Errorf("storage: txn %v: %d bytes exceed %d", t.Zxid, len(t.Data), MaxRecordData)
		}
		prev = t.Zxid
	}
	for _, t := range txns {
		m.entries = append(m.entries, t)
	}
	return nil
}

func (m *MemLog) last() zab.Zxid {
	if len(m.entries) == 0 {
		return 0
	}
	return m.entries[len(m.entries)-1].Zxid
}

// Sync implements Log.
func (m *MemLog) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.synced = len(m.entries)
	return nil
}

// SyncThrough makes the entries up to z durable: a Sync issued when z was the last
// entry, completing later (the simulator's disk, whose syncs take time). A caller whose
// sync was overtaken by a Truncate below z passes the truncation point instead.
func (m *MemLog) SyncThrough(z zab.Zxid) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Only the unsynced tail is searched: it is short, the whole log is not.
	m.synced += aboveIn(m.entries[m.synced:], z)
}

// Crash forgets every entry appended since the last Sync, as a kill would.
func (m *MemLog) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = m.entries[:m.synced:m.synced]
}

// Entries implements Log.
func (m *MemLog) Entries(after zab.Zxid) iter.Seq2[zab.Txn, error] {
	m.mu.Lock()
	i := m.above(after)
	snap := m.entries[i:len(m.entries):len(m.entries)] // entries are never modified in place
	m.mu.Unlock()
	return func(yield func(zab.Txn, error) bool) {
		for _, t := range snap {
			if !yield(zab.Txn{Zxid: t.Zxid, Data: slices.Clone(t.Data)}, nil) {
				return
			}
		}
	}
}

// above is the index of the first entry with Zxid > z.
func (m *MemLog) above(z zab.Zxid) int { return aboveIn(m.entries, z) }

// aboveIn is the index of the first of ts with Zxid > z.
func aboveIn(ts []zab.Txn, z zab.Zxid) int {
	i, _ := slices.BinarySearchFunc(ts, z, func(t zab.Txn, z zab.Zxid) int {
		if t.Zxid <= z {
			return -1
		}
		return 1
	})
	return i
}

// FirstZxid implements Log.
func (m *MemLog) FirstZxid() zab.Zxid {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) == 0 {
		return 0
	}
	return m.entries[0].Zxid
}

// LastZxid implements Log.
func (m *MemLog) LastZxid() zab.Zxid {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last()
}

// Truncate implements Log (durably: a Crash keeps the truncation).
func (m *MemLog) Truncate(after zab.Zxid) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	i := m.above(after)
	m.entries = m.entries[:i:i] // a later append must not overwrite what Entries handed out
	m.synced = min(m.synced, i)
	return nil
}

// Compact implements Log: it drops every entry <= upTo.
func (m *MemLog) Compact(upTo zab.Zxid) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	i := m.above(upTo)
	if i == len(m.entries) && i > 0 {
		i-- // keep the last entry, as FileLog keeps its active segment
	}
	// A copy, so that the dropped entries' data is freed (Entries' earlier results keep
	// the old array). It keeps the old capacity: a log compacted at about the same
	// length each time would otherwise regrow (and copy itself) from the kept few.
	kept := make([]zab.Txn, len(m.entries)-i, max(cap(m.entries), len(m.entries)-i))
	copy(kept, m.entries[i:])
	m.entries = kept
	m.synced = max(m.synced-i, 0)
	return nil
}

// ZxidBefore is the zxid to Compact up to so that n entries at or below z stay: the
// n+1-th entry back from the first above z, or 0 if there are not that many.
func (m *MemLog) ZxidBefore(z zab.Zxid, n int) zab.Zxid {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.above(z) - n - 1; i >= 0 {
		return m.entries[i].Zxid
	}
	return 0
}

// Close implements Log.
func (m *MemLog) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
