package sim

import (
	"context"
	"log/slog"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/storage"
	"github.com/polebench/polebench/zab"
)

// disk is a server's durable state: poled's own storage.Store over the in-memory log,
// snapshots and hard state, so the simulator's crashes test the persistence poled
// runs. What it adds is time: the log's sync takes the disk's latency, and the appends
// it covers survive a kill only once it completes (MemLog.Crash drops the rest). A
// truncation, the hard state and a snapshot are durable when written, as poled's
// files are with fsync off (a killed process loses no completed write() or rename).
type disk struct {
	log      *storage.MemLog
	snaps    *storage.MemSnapshots
	hs       *storage.MemHardState
	st       *storage.Store // this incarnation's; its snapshot receive is the process's memory
	syncs    []pendingSync  // issued, not complete, in order of completion
	now, due int64          // of the Persist in progress
	logBytes int            // appended since the last snapshot (about: a memory trigger)
	snapSize int64          // of the newest snapshot
}

// pendingSync makes the log durable through zxid at at.
type pendingSync struct {
	at      int64
	through zab.Zxid
}

// latentLog is the store's log: appends count towards compaction, and a sync waits
// for the disk.
type latentLog struct {
	*storage.MemLog
	d *disk
}

func (l latentLog) Append(txns ...zab.Txn) error {
	for _, t := range txns {
		l.d.logBytes += len(t.Data)
	}
	return l.MemLog.Append(txns...)
}

func (l latentLog) Sync() error {
	d := l.d
	if d.due <= d.now && len(d.syncs) == 0 {
		return l.MemLog.Sync()
	}
	at := d.due // the disk completes its syncs in order
	if n := len(d.syncs); n > 0 {
		at = max(at, d.syncs[n-1].at)
	}
	d.syncs = append(d.syncs, pendingSync{at: at, through: l.LastZxid()})
	return nil
}

// Truncate also pulls pending syncs down to after: one issued before the truncation
// must not cover what is appended after it under the same zxids.
func (l latentLog) Truncate(after zab.Zxid) error {
	for i := range l.d.syncs {
		l.d.syncs[i].through = min(l.d.syncs[i].through, after)
	}
	return l.MemLog.Truncate(after)
}

// A server snapshots its tree and drops the log before it once the log holds more
// data than compactBytes and than the last snapshot (ZooKeeper's snapCount, in bytes;
// poled's own log grows for the length of a run, which a simulator of many servers at
// high rates cannot afford in memory). About keepBehind transactions stay for DIFFs.
const (
	compactBytes = 16 << 20
	keepBehind   = 1000
)

func (d *disk) wantsCompaction() bool {
	return len(d.syncs) == 0 && int64(d.logBytes) > max(compactBytes, d.snapSize)
}

// settle completes the syncs due by now.
func (d *disk) settle(now int64) {
	i := 0
	for ; i < len(d.syncs) && d.syncs[i].at <= now; i++ {
		d.log.SyncThrough(d.syncs[i].through)
	}
	if i > 0 { // in place: a sync per write would otherwise allocate as the slice walks on
		d.syncs = d.syncs[:copy(d.syncs, d.syncs[i:])]
	}
}

// crash is a kill at now: the syncs complete by then stay, the rest and the process's
// memory are lost.
func (d *disk) crash(now int64) {
	d.settle(now)
	d.log.Crash()
	d.syncs, d.st = nil, nil
}

// restore opens the store for an incarnation and reads it as poled does at start
// (replica.Restore: a fresh server preloads).
func (d *disk) restore(cfg replica.Config, log *slog.Logger) (storage.Restored, error) {
	if d.log == nil {
		d.log, d.snaps, d.hs = storage.NewMemLog(), storage.NewMemSnapshots(1), &storage.MemHardState{}
	}
	d.st = &storage.Store{Log: latentLog{d.log, d}, Snapshots: d.snaps, State: d.hs, Logger: log}
	r, err := replica.Restore(context.Background(), d.st, cfg, log)
	if err != nil {
		return storage.Restored{}, err
	}
	d.snapSize = d.newestSnapshotSize()
	return r, nil
}

func (d *disk) newestSnapshotSize() int64 {
	if metas, err := d.snaps.List(); err == nil && len(metas) > 0 {
		return metas[0].Size
	}
	return 0
}

// persist is storage.Store.Persist, issued at now with the log's sync complete at done
// (now, for a disk without latency). A completed snapshot's tree comes back at once:
// the process has it in memory.
func (d *disk) persist(ops []zab.Op, now, done int64) (*datatree.Tree, error) {
	d.settle(now)
	d.now, d.due = now, done
	t, err := d.st.Persist(ops)
	if t != nil {
		d.logBytes, d.snapSize = 0, d.newestSnapshotSize()
	}
	return t, err
}

// compact snapshots view (the tree as applied) when the log is long, and drops the log
// up to keepBehind transactions before it.
func (d *disk) compact(view *datatree.View) error {
	defer view.Close()
	if err := storage.SaveView(d.snaps, view); err != nil {
		return err
	}
	d.logBytes, d.snapSize = 0, d.newestSnapshotSize()
	return d.log.Compact(d.log.ZxidBefore(view.Zxid(), keepBehind))
}
