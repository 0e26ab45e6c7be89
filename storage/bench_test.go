package storage

import (
	"context"
	"flag"
	"fmt"
	"testing"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
)

var snapMB = flag.Int("snapmb", 16, "state size in MB for the snapshot benchmarks (the paper's largest: 250)")

// BenchmarkLogAppend appends 1 kB txns, each followed by Sync, as a follower
// does before it ACKs a proposal.
func BenchmarkLogAppend(b *testing.B) {
	for _, fsync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			l, err := OpenLog(b.TempDir(), LogOptions{Fsync: fsync}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			data := make([]byte, 1024)
			z := zab.Zxid(0)
			b.SetBytes(1024)
			for b.Loop() {
				z++
				if err := l.Append(zab.Txn{Zxid: z, Data: data}); err != nil {
					b.Fatal(err)
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func preloadedTree(b *testing.B) *datatree.Tree {
	tr := datatree.New()
	tr.Apply(1, datatree.Txn{Op: datatree.Noop()})
	if _, err := tr.Preload(int64(*snapMB) << 20); err != nil {
		b.Fatal(err)
	}
	return tr
}

// BenchmarkSnapshotWrite: Store.Snapshot (clone, stream, checksum, fsync, rename).
func BenchmarkSnapshotWrite(b *testing.B) {
	tr := preloadedTree(b)
	s, err := Open(b.TempDir(), Options{Fsync: true, KeepSnapshots: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.SetBytes(int64(*snapMB) << 20)
	for b.Loop() {
		if _, err := s.Snapshot(tr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotLoad: Store.Recover from a snapshot file (page cache warm).
func BenchmarkSnapshotLoad(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Snapshot(preloadedTree(b)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(*snapMB) << 20)
	for b.Loop() {
		tr, err := s.Recover(context.Background())
		if err != nil || tr.LastZxid() != 1 {
			b.Fatal(err)
		}
	}
}
