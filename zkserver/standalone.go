package zkserver

import (
	"context"
	"sync"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
	"github.com/polebench/polebench/zkproto"
)

// Standalone is a single-node Backend: writes apply directly to a datatree.Tree at
// locally assigned zxids (epoch 0, as a standalone ZooKeeper), and the node expires
// its sessions itself. It is what poled runs without peers, and what the protocol
// tests run against.
type Standalone struct {
	now func() time.Time

	mu      sync.RWMutex // Read shares it; Apply and the applied hook hold it
	tree    *datatree.Tree
	applied func(datatree.Txn, datatree.Result)

	trMu    sync.Mutex
	tracker *SessionTracker
}

// NewStandalone serves tree (which may hold sessions, e.g. restored from a snapshot:
// they get a fresh timeout). now is the clock; nil means time.Now.
func NewStandalone(tree *datatree.Tree, now func() time.Time) *Standalone {
	if now == nil {
		now = time.Now
	}
	b := &Standalone{now: now, tree: tree, tracker: NewSessionTracker()}
	t := now()
	for _, s := range tree.Sessions() {
		b.tracker.Add(s.ID, time.Duration(s.Timeout)*time.Millisecond, t)
	}
	return b
}

// OnApplied sets the hook called for every applied transaction (Server.Applied).
// Set it before serving.
func (b *Standalone) OnApplied(f func(datatree.Txn, datatree.Result)) {
	b.mu.Lock()
	b.applied = f
	b.mu.Unlock()
}

// Submit applies txn at once; see Backend.
func (b *Standalone) Submit(txn datatree.Txn) <-chan Outcome {
	ch := make(chan Outcome, 1)
	ch <- Outcome{Result: b.apply(txn)}
	return ch
}

func (b *Standalone) apply(txn datatree.Txn) datatree.Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	txn.Time = now.UnixMilli()
	res := b.tree.Apply(b.tree.LastZxid()+1, txn)
	b.trMu.Lock()
	switch {
	case txn.Type == datatree.OpCreateSession && res.Err == datatree.Ok:
		b.tracker.Add(txn.Session, time.Duration(txn.Timeout)*time.Millisecond, now)
	case txn.Type == datatree.OpCloseSession:
		b.tracker.Remove(txn.Session)
	}
	b.trMu.Unlock()
	if b.applied != nil {
		b.applied(txn, res)
	}
	return res
}

// Sync is immediate: a standalone node is its own leader.
func (b *Standalone) Sync() <-chan error {
	ch := make(chan error, 1)
	ch <- nil
	return ch
}

// Read runs fn under the read lock.
func (b *Standalone) Read(fn func(*datatree.Tree)) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	fn(b.tree)
}

// Touch extends a session's life.
func (b *Standalone) Touch(id int64) {
	b.trMu.Lock()
	b.tracker.Touch(id, b.now())
	b.trMu.Unlock()
}

// Status: always serving, mode standalone.
func (b *Standalone) Status() BackendStatus {
	return BackendStatus{Serving: true, Mode: zkproto.ModeStandalone}
}

// LastZxid is the zxid of the last applied transaction.
func (b *Standalone) LastZxid() zab.Zxid {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.tree.LastZxid()
}

// ExpireSessions closes every session whose timeout passed without a touch, each
// through a closeSession transaction, and returns their ids.
func (b *Standalone) ExpireSessions() []int64 {
	b.trMu.Lock()
	ids := b.tracker.Expire(b.now())
	b.trMu.Unlock()
	for _, id := range ids {
		b.apply(datatree.Txn{Session: id, Op: datatree.CloseSession()})
	}
	return ids
}

// Reap deletes the container and TTL nodes due now, each through a
// deleteContainer transaction, and returns their paths.
func (b *Standalone) Reap() []string {
	now := b.now()
	b.mu.RLock()
	due := b.tree.Reapable(now.UnixMilli())
	b.mu.RUnlock()
	var done []string
	for _, p := range due {
		if b.apply(datatree.Txn{Op: datatree.DeleteContainer(p)}).Err == datatree.Ok {
			done = append(done, p)
		}
	}
	return done
}

// Run expires sessions every tick, and reaps every reap (if positive), until ctx
// is done.
func (b *Standalone) Run(ctx context.Context, tick, reap time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			b.ExpireSessions()
			if reap > 0 && now.Sub(last) >= reap {
				last = now
				b.Reap()
			}
		}
	}
}
