package storage

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
)

func TestHardState(t *testing.T) {
	dir := t.TempDir()
	for name, s := range map[string]HardStateStore{
		"file": &FileHardState{Path: filepath.Join(dir, "hs"), Fsync: true},
		"mem":  &MemHardState{},
	} {
		if hs, err := s.Load(); err != nil || hs != (zab.HardState{}) {
			t.Errorf("%s: fresh %+v %v", name, hs, err)
		}
		want := zab.HardState{AcceptedEpoch: 7, CurrentEpoch: 6}
		if err := s.Save(want); err != nil {
			t.Fatal(err)
		}
		if hs, err := s.Load(); err != nil || hs != want {
			t.Errorf("%s: loaded %+v %v", name, hs, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "hs"))
	b[5] ^= 1
	os.WriteFile(filepath.Join(dir, "hs"), b, 0o644)
	if _, err := (&FileHardState{Path: filepath.Join(dir, "hs")}).Load(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt hard state: %v", err)
	}
}

// A driver persists what the core asks, applies what it commits and takes
// snapshots; Restore gives back exactly that, and zab.New accepts it.
func TestPersistRestore(t *testing.T) {
	txns := workload(500)
	for _, im := range storeImpls() {
		t.Run(im.name, func(t *testing.T) {
			s := im.open(t)
			hs := zab.HardState{AcceptedEpoch: 5, CurrentEpoch: 5}
			if _, err := s.Persist([]zab.Op{&zab.SetHardState{HardState: hs}, &zab.Append{Txns: txns[:300]}}); err != nil {
				t.Fatal(err)
			}
			applied := treeAt(t, txns[:250]) // committed and applied so far
			if _, err := s.Snapshot(applied); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Persist([]zab.Op{&zab.Append{Txns: txns[300:400]}, &zab.Truncate{After: txns[379].Zxid}}); err != nil {
				t.Fatal(err)
			}
			s.Log.Append(txns[380:]...) // never synced: lost in the kill
			s = im.restart(t, s)
			r, err := s.Restore(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			p := r.Persisted
			if p.HardState != hs || p.Snapshot != txns[249].Zxid || r.Tree.LastZxid() != p.Snapshot {
				t.Errorf("restored %+v snapshot %v, tree at %v", p.HardState, p.Snapshot, r.Tree.LastZxid())
			}
			sameTree(t, r.Tree, applied, "restored state machine")
			// The log holds a run of txns that covers everything after the
			// snapshot up to the last sync (more if a segment roll flushed it).
			first := 0
			for first < len(txns) && len(p.Log) > 0 && txns[first].Zxid != p.Log[0].Zxid {
				first++
			}
			if first > 250 || first+len(p.Log) < 380 || first+len(p.Log) > 380 && im.name == "mem" ||
				!equalTxns(p.Log, txns[first:first+len(p.Log)]) {
				t.Errorf("restored log: %d entries from txn %d", len(p.Log), first)
			}
			if _, err := zab.New(zab.DefaultConfig(1, []int{1, 2, 3}, 100*time.Millisecond), p); err != nil {
				t.Errorf("zab refuses the restored state: %v", err)
			}
		})
	}
}

// A lagging follower receives the leader's state in chunks: the log and any
// snapshot of its old history go, the new state comes back after a restart.
func TestPersistSnapshotChunks(t *testing.T) {
	txns := workload(300)
	for _, im := range storeImpls() {
		t.Run(im.name, func(t *testing.T) {
			s := im.open(t)
			s.Persist([]zab.Op{&zab.Append{Txns: txns}})
			s.Snapshot(treeAt(t, txns)) // a snapshot of a history the leader does not have
			leader := treeAt(t, txns[:100])
			leader.Apply(txns[99].Zxid+1, datatree.Txn{Op: datatree.Create("/leader", nil, datatree.Persistent)})
			var state bytes.Buffer
			leader.WriteSnapshot(&state)
			z := leader.LastZxid()
			chunks := func(b []byte, size int) []zab.Op {
				var ops []zab.Op
				for seq := 0; len(b) > 0; seq++ {
					n := min(size, len(b))
					ops = append(ops, &zab.SnapshotChunk{Zxid: z, Seq: uint32(seq), Data: b[:n], Last: n == len(b)})
					b = b[n:]
				}
				return ops
			}
			// A first attempt dies halfway; the retry starts again at Seq 0.
			partial := chunks(state.Bytes()[:1000], 300)
			partial[len(partial)-1].(*zab.SnapshotChunk).Last = false
			if got, err := s.Persist(partial); err != nil || got != nil {
				t.Fatalf("partial: %v %v", got, err)
			}
			if _, err := s.Persist([]zab.Op{&zab.SnapshotChunk{Zxid: z, Seq: 9}}); err == nil {
				t.Errorf("out-of-sequence chunk accepted")
			}
			// A damaged state is refused when its last chunk comes, before anything of
			// the old history goes.
			before, _ := s.Snapshots.List()
			bad := bytes.Clone(state.Bytes())
			bad[len(bad)/2] ^= 1
			if got, err := s.Persist(chunks(bad, 4096)); err == nil || got != nil {
				t.Fatalf("damaged snapshot installed: %v", err)
			}
			if after, _ := s.Snapshots.List(); !slices.Equal(after, before) || s.Log.LastZxid() != txns[len(txns)-1].Zxid {
				t.Fatalf("a refused snapshot changed the store: snapshots %v -> %v, log ends at %v", before, after, s.Log.LastZxid())
			}
			got, err := s.Persist(chunks(state.Bytes(), 4096))
			if err != nil || got == nil {
				t.Fatalf("install: %v", err)
			}
			sameTree(t, got, leader, "installed")
			next := zab.Txn{Zxid: zab.MakeZxid(9, 1), Data: datatree.Txn{Op: datatree.Noop()}.Marshal()}
			if _, err := s.Persist([]zab.Op{&zab.Append{Txns: []zab.Txn{next}}}); err != nil {
				t.Fatal(err)
			}
			s = im.restart(t, s)
			r, err := s.Restore(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sameTree(t, r.Tree, leader, "restored")
			if r.Persisted.Snapshot != z || len(r.Persisted.Log) != 1 || r.Persisted.Log[0].Zxid != next.Zxid {
				t.Errorf("restored snapshot %v, log %d entries", r.Persisted.Snapshot, len(r.Persisted.Log))
			}
			if ms, _ := s.Snapshots.List(); ms[0].Zxid != z {
				t.Errorf("newest snapshot %v, want %v", ms[0].Zxid, z)
			}
		})
	}
}
