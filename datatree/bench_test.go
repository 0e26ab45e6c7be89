package datatree

import (
	"bytes"
	"flag"
	"io"
	"testing"
	"time"

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

// BenchmarkSnapshotPause streams a snapshot of a -snapmb tree while another goroutine
// keeps applying 1 kB setData writes, and reports the longest any single Apply took
// (max-pause-ms): the stall a leader's clients would see while it syncs a follower.
// view-ms is how long opening the view took its caller (the leader's loop): Write lists
// the paths. Run: go test ./datatree -run XXX -bench SnapshotPause -benchtime 1x -snapmb 250
func BenchmarkSnapshotPause(b *testing.B) {
	tr := preloaded(b)
	tr.Apply(tr.LastZxid()+1, Txn{Op: Create("/k", nil, Persistent)})
	data := make([]byte, 1024)
	for b.Loop() {
		var worst time.Duration
		stop := make(chan struct{})
		done := make(chan struct{})
		started := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				tr.Apply(tr.LastZxid()+1, Txn{Op: SetData("/k", data, -1)})
				worst = max(worst, time.Since(t0))
				if i == 0 {
					close(started)
				}
				time.Sleep(100 * time.Microsecond) // a write rate of a few thousand per second
			}
		}()
		<-started
		t0 := time.Now()
		v := tr.View()
		viewTook := time.Since(t0)
		if err := v.Write(io.Discard); err != nil {
			b.Fatal(err)
		}
		v.Close()
		close(stop)
		<-done
		b.ReportMetric(float64(worst)/1e6, "max-pause-ms")
		b.ReportMetric(float64(viewTook)/1e6, "view-ms")
	}
}
