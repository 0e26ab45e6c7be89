package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
)

// HardStateStore keeps the broadcast's epochs (zab.HardState) across restarts.
type HardStateStore interface {
	Save(zab.HardState) error // durable (when fsync is on) and atomic
	Load() (zab.HardState, error)
}

// FileHardState is a HardStateStore in one small file, replaced atomically:
//
//	"PHS1" accepted:u32 current:u32 crc32c:u32
type FileHardState struct {
	Path  string
	Fsync bool
}

const hardStateMagic = "PHS1"

// Save implements HardStateStore.
func (f *FileHardState) Save(hs zab.HardState) error {
	b := []byte(hardStateMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(hs.AcceptedEpoch))
	b = binary.LittleEndian.AppendUint32(b, uint32(hs.CurrentEpoch))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	tmp := f.Path + ".tmp"
	if err := writeFileSync(tmp, b, f.Fsync); err != nil {
		return fmt.Errorf("storage: save hard state: %w", err)
	}
	if err := os.Rename(tmp, f.Path); err != nil {
		return fmt.Errorf("storage: save hard state: %w", err)
	}
	if f.Fsync {
		return syncDir(filepath.Dir(f.Path))
	}
	return nil
}

func writeFileSync(path string, b []byte, fsync bool) error {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fh.Write(b)
	if err == nil && fsync {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// Load implements HardStateStore; a missing file is the zero HardState.
func (f *FileHardState) Load() (zab.HardState, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return zab.HardState{}, nil
	}
	if err != nil {
		return zab.HardState{}, fmt.Errorf("storage: load hard state: %w", err)
	}
	if len(b) != 16 || string(b[:4]) != hardStateMagic || crc32.Checksum(b[:12], castagnoli) != binary.LittleEndian.Uint32(b[12:]) {
		return zab.HardState{}, fmt.Errorf("storage: hard state %s: %w", f.Path, ErrCorrupt)
	}
	return zab.HardState{AcceptedEpoch: zab.Epoch(binary.LittleEndian.Uint32(b[4:])), CurrentEpoch: zab.Epoch(binary.LittleEndian.Uint32(b[8:]))}, nil
}

// MemHardState is a HardStateStore in memory.
type MemHardState struct {
	mu sync.Mutex
	hs zab.HardState
}

// Save implements HardStateStore.
func (m *MemHardState) Save(hs zab.HardState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hs = hs
	return nil
}

// Load implements HardStateStore.
func (m *MemHardState) Load() (zab.HardState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hs, nil
}

// Restored is a restarted replica's durable state, ready for zab.New.
type Restored struct {
	// Tree is the state machine at Persisted.Snapshot: the newest snapshot that
	// loads (an older one if it is corrupt), or an empty tree.
	Tree *datatree.Tree
	// Persisted holds the epochs, the snapshot's zxid and every logged txn; the
	// core decides which of them commit (the driver applies them when it says).
	Persisted zab.Persisted
}

// Restore reads what a restart needs. Unlike Recover it does not replay the
// log: txns after the snapshot are the broadcast's to commit or truncate.
func (s *Store) Restore(ctx context.Context) (Restored, error) {
	hs, err := s.State.Load()
	if err != nil {
		return Restored{}, err
	}
	t, err := s.newestSnapshot()
	if err != nil {
		return Restored{}, err
	}
	r := Restored{Tree: t, Persisted: zab.Persisted{HardState: hs, Snapshot: t.LastZxid()}}
	for txn, err := range s.Log.Entries(0) {
		if err != nil {
			return Restored{}, fmt.Errorf("storage: restore: %w", err)
		}
		if len(r.Persisted.Log)%1024 == 0 && ctx.Err() != nil {
			return Restored{}, ctx.Err()
		}
		r.Persisted.Log = append(r.Persisted.Log, txn)
	}
	return r, nil
}

// Persist carries out a zab Ready's persistence operations in order, then syncs
// the log once if they appended to it (a Ready that only commits does not: with
// fsync on, that fsync was wasted). When a SnapshotChunk with Last installs a
// snapshot, it returns the installed tree: the driver's state machine becomes it.
func (s *Store) Persist(ops []zab.Op) (*datatree.Tree, error) {
	var installed *datatree.Tree
	appended := false
	for _, op := range ops {
		switch op := op.(type) {
		case *zab.Append:
			if err := s.Log.Append(op.Txns...); err != nil {
				return nil, err
			}
			appended = true
		case *zab.Truncate:
			if err := s.Truncate(op.After); err != nil {
				return nil, err
			}
		case *zab.SetHardState:
			if err := s.State.Save(op.HardState); err != nil {
				return nil, err
			}
		case *zab.SnapshotChunk:
			t, err := s.chunk(op)
			if err != nil {
				return nil, err
			}
			if t != nil {
				installed = t
			}
		default:
			return nil, fmt.Errorf("storage: unknown persistence op %T", op)
		}
	}
	if !appended {
		return installed, nil
	}
	return installed, s.Log.Sync()
}

// ownedWriter is a sink that can keep what it is written instead of copying it
// (MemSnapshots').
type ownedWriter interface {
	WriteOwned(p []byte) (int, error)
}

// chunk streams a received snapshot into the store and loads it as it comes (the
// loaded tree keeps c.Data); the last chunk installs it, once it has loaded whole.
func (s *Store) chunk(c *zab.SnapshotChunk) (*datatree.Tree, error) {
	if c.Seq == 0 {
		if s.recv != nil {
			s.recv.Cancel()
		}
		k, err := s.Snapshots.Create(c.Zxid)
		if err != nil {
			return nil, err
		}
		if _, owns := k.(ownedWriter); !owns {
			if metas, err := s.Snapshots.List(); err == nil && len(metas) > 0 {
				grow(k, metas[0].Size) // the leader's tree is about as large as ours
			}
		}
		s.recv, s.recvZxid, s.recvSeq, s.recvLoad = k, c.Zxid, 0, datatree.NewLoader()
	} else if s.recv == nil || c.Zxid != s.recvZxid || c.Seq != s.recvSeq+1 {
		return nil, fmt.Errorf("storage: snapshot chunk %d of %v out of sequence", c.Seq, c.Zxid)
	}
	s.recvSeq = c.Seq
	k := s.recv
	write := k.Write
	if o, ok := k.(ownedWriter); ok {
		write = o.WriteOwned // the loader below keeps c.Data too: it never changes
	}
	if _, err := write(c.Data); err != nil {
		return nil, s.cancelRecv(err)
	}
	if _, err := s.recvLoad.Write(c.Data); err != nil {
		return nil, s.cancelRecv(fmt.Errorf("storage: snapshot %v from the leader: %w", c.Zxid, err))
	}
	if !c.Last {
		return nil, nil
	}
	t, err := s.recvLoad.Tree()
	if err == nil && t.LastZxid() != c.Zxid {
		err = fmt.Errorf("%w: content is at %v", ErrCorrupt, t.LastZxid())
	}
	if err != nil {
		return nil, s.cancelRecv(fmt.Errorf("storage: snapshot %v from the leader: %w", c.Zxid, err))
	}
	s.recv, s.recvLoad = nil, nil
	// Drop the other history first: a crash before the commit below leaves an
	// older, consistent state, never the old log on top of the new snapshot.
	if err := s.Snapshots.DeleteAbove(c.Zxid); err != nil {
		k.Cancel()
		return nil, err
	}
	if err := s.Log.Truncate(0); err != nil {
		k.Cancel()
		return nil, err
	}
	if err := k.Close(); err != nil {
		return nil, err
	}
	return t, nil
}

// cancelRecv drops the snapshot being received and returns err.
func (s *Store) cancelRecv(err error) error {
	s.recv.Cancel()
	s.recv, s.recvLoad = nil, nil
	return err
}

// newestSnapshot loads the newest snapshot that loads, or an empty tree if
// there is none; if every snapshot is bad it fails rather than start empty.
func (s *Store) newestSnapshot() (*datatree.Tree, error) {
	metas, err := s.Snapshots.List()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, m := range metas {
		t := datatree.New()
		if err := s.loadSnapshot(t, m.Zxid); err != nil {
			s.logger().Warn("skipping snapshot", "zxid", m.Zxid, "err", err)
			errs = append(errs, err)
			continue
		}
		return t, nil
	}
	if len(metas) > 0 {
		return nil, fmt.Errorf("storage: no usable snapshot: %w", errors.Join(errs...))
	}
	return datatree.New(), nil
}
