package storage

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
)

// Options configure a Store on disk.
type Options struct {
	Fsync         bool  // fsync log syncs and snapshots (off: survive a process kill, not a power cut)
	SegmentSize   int64 // log segment roll size; default 64 MiB
	KeepSnapshots int   // snapshots retained; default 3
	Logger        *slog.Logger
	// TrustTail breaks the log on purpose, for the checkers' tests (LogOptions.TrustTail).
	TrustTail bool
}

// Store is a replica's durable state: log, snapshots and epochs. Its methods
// other than the fields' own are for one goroutine (the node's driver).
type Store struct {
	Log       Log
	Snapshots SnapshotStore
	State     HardStateStore
	Logger    *slog.Logger // may be nil

	recv     SnapshotSink // snapshot being received in chunks (Persist)
	recvLoad *datatree.Loader
	recvZxid zab.Zxid
	recvSeq  uint32
}

// Open opens the store in dir (dir/log, dir/snap, dir/hardstate), creating it if needed.
func Open(dir string, o Options) (*Store, error) {
	// With fsync on, the log says how much of it is durable (LogOptions.TrackSynced):
	// a nemesis can then cut it back to that, as a power loss would.
	l, err := OpenLog(filepath.Join(dir, "log"), LogOptions{Fsync: o.Fsync, SegmentSize: o.SegmentSize, TrackSynced: o.Fsync, TrustTail: o.TrustTail}, o.Logger)
	if err != nil {
		return nil, err
	}
	s, err := OpenSnapshots(filepath.Join(dir, "snap"), SnapshotOptions{Fsync: o.Fsync, Keep: o.KeepSnapshots}, o.Logger)
	if err != nil {
		l.Close()
		return nil, err
	}
	hs := &FileHardState{Path: filepath.Join(dir, "hardstate"), Fsync: o.Fsync}
	return &Store{Log: l, Snapshots: s, State: hs, Logger: o.Logger}, nil
}

// NewMem returns a Store held in memory.
func NewMem() *Store {
	return &Store{Log: NewMemLog(), Snapshots: NewMemSnapshots(0), State: &MemHardState{}}
}

// Close closes the log.
func (s *Store) Close() error { return s.Log.Close() }

func (s *Store) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Recover rebuilds the tree after a restart the way ZooKeeper does: the
// newest snapshot that loads (an older one if it is corrupt), then every log
// entry after it, committed or not. A replica driven by package zab uses
// Restore instead, which leaves the log to the broadcast.
func (s *Store) Recover(ctx context.Context) (*datatree.Tree, error) {
	t, err := s.newestSnapshot()
	if err != nil {
		return nil, fmt.Errorf("storage: recover: %w", err)
	}
	n := 0
	for txn, err := range s.Log.Entries(t.LastZxid()) {
		if err != nil {
			return nil, fmt.Errorf("storage: recover: %w", err)
		}
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, err := t.ApplyEncoded(txn); err != nil {
			return nil, fmt.Errorf("storage: recover: %w", err)
		}
	}
	s.logger().Info("recovered", "replayed", n, "last", t.LastZxid())
	return t, nil
}

func (s *Store) loadSnapshot(t *datatree.Tree, z zab.Zxid) error {
	rc, err := s.Snapshots.Open(z)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := t.ReadSnapshot(rc); err != nil {
		return fmt.Errorf("snapshot %v: %w", z, err)
	}
	if t.LastZxid() != z {
		return fmt.Errorf("snapshot %v: %w: content is at %v", z, ErrCorrupt, t.LastZxid())
	}
	return nil
}

// Snapshot writes a snapshot of t (a view of it, so Apply may go on), then
// compacts the log up to the oldest retained snapshot: the log always holds
// everything after each snapshot kept.
func (s *Store) Snapshot(t *datatree.Tree) (SnapshotMeta, error) {
	v := t.View()
	defer v.Close()
	z := v.Zxid()
	if err := SaveView(s.Snapshots, v); err != nil {
		return SnapshotMeta{}, err
	}
	metas, err := s.Snapshots.List()
	if err != nil {
		return SnapshotMeta{}, err
	}
	meta := SnapshotMeta{Zxid: ^z} // not found
	for _, m := range metas {
		if m.Zxid == z {
			meta = m
		}
	}
	if meta.Zxid != z {
		return SnapshotMeta{}, fmt.Errorf("storage: snapshot %v missing after commit", z)
	}
	return meta, s.Log.Compact(metas[len(metas)-1].Zxid)
}

// SaveView writes v into ss as the snapshot at v's zxid, committed whole or not at
// all. It leaves the log alone (Snapshot compacts it; the simulator compacts its own).
func SaveView(ss SnapshotStore, v *datatree.View) error {
	sink, err := ss.Create(v.Zxid())
	if err != nil {
		return err
	}
	grow(sink, v.ApproximateSize()) // the encoding adds a stat and lengths per node
	if err := v.Write(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// grow tells a sink that can take the hint (MemSnapshots') to make room for about
// size bytes, and an eighth more.
func grow(sink SnapshotSink, size int64) {
	if g, ok := sink.(interface{ Grow(int) }); ok && size > 0 {
		g.Grow(int(size + size/8))
	}
}

// Truncate removes everything above after, from the log and the snapshots
// (Zab's TRUNC). Recover again to get the matching tree.
func (s *Store) Truncate(after zab.Zxid) error {
	if err := s.Log.Truncate(after); err != nil {
		return err
	}
	return s.Snapshots.DeleteAbove(after)
}

// Install persists a tree received whole from the leader (Zab's SNAP): the
// log is emptied and snapshots above the tree's zxid dropped (they belong to
// another history), then the tree becomes the newest snapshot. Later txns
// append after it.
func (s *Store) Install(t *datatree.Tree) (SnapshotMeta, error) {
	if err := s.Snapshots.DeleteAbove(t.LastZxid()); err != nil {
		return SnapshotMeta{}, err
	}
	if err := s.Log.Truncate(0); err != nil {
		return SnapshotMeta{}, err
	}
	return s.Snapshot(t)
}
