package datatree

import (
	"bytes"
	"flag"
	"io"
	"testing"

	"github.com/polebench/polebench/zab"
)

// -snapmb sets the tree size of the snapshot and preload benchmarks; the
// small default keeps "go test -bench . -benchtime=1x" quick. The paper's
// largest snapshot is -snapmb=250.
var snapMB = flag.Int("snapmb", 16, "state size in MB for snapshot/preload benchmarks")

func preloaded(b *testing.B) *Tree {
	tr := New()
	if _, err := tr.Preload(int64(*snapMB) << 20); err != nil {
		b.Fatal(err)
	}
	return tr
}

func BenchmarkPreload(b *testing.B) {
	b.SetBytes(int64(*snapMB) << 20)
	for b.Loop() {
		if _, err := New().Preload(int64(*snapMB) << 20); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteSnapshot(b *testing.B) {
	tr := preloaded(b)
	b.SetBytes(int64(*snapMB) << 20)
	for b.Loop() {
		if err := tr.WriteSnapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadSnapshot(b *testing.B) {
	var buf bytes.Buffer
	if err := preloaded(b).WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(*snapMB) << 20)
	for b.Loop() {
		if err := New().ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClone(b *testing.B) {
	tr := preloaded(b)
	b.SetBytes(int64(*snapMB) << 20)
	for b.Loop() {
		tr.Clone()
	}
}

// BenchmarkApplySetData is the workload's write: a 1 kB setData, decoded.
func BenchmarkApplySetData(b *testing.B) {
	tr := New()
	tr.Apply(1, Txn{Op: Create("/k", nil, Persistent)})
	enc := Txn{Session: 0, Time: 1, Op: SetData("/k", make([]byte, 1024), -1)}.Marshal()
	z := zab.Zxid(1)
	b.SetBytes(1024)
	for b.Loop() {
		z++
		if r, err := tr.ApplyEncoded(zab.Txn{Zxid: z, Data: enc}); err != nil || r.Err != Ok {
			b.Fatal(err, r.Err)
		}
	}
}
