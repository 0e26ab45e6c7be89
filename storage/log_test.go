package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polebench/polebench/zab"
)

func txn(z zab.Zxid, size int) zab.Txn {
	d := make([]byte, size)
	for i := range d {
		d[i] = byte(uint64(z) + uint64(i))
	}
	return zab.Txn{Zxid: z, Data: d}
}

// zxids spans two epochs, like a log that saw a leader change.
func zxids(n int) []zab.Zxid {
	var out []zab.Zxid
	for i := range n {
		if i < n/2 {
			out = append(out, zab.MakeZxid(1, uint32(i+1)))
		} else {
			out = append(out, zab.MakeZxid(2, uint32(i+1)))
		}
	}
	return out
}

func appendAll(t *testing.T, l Log, zs []zab.Zxid, size int) []zab.Txn {
	t.Helper()
	var out []zab.Txn
	for _, z := range zs {
		tx := txn(z, size)
		if err := l.Append(tx); err != nil {
			t.Fatal(err)
		}
		out = append(out, tx)
	}
	return out
}

func entries(t *testing.T, l Log, after zab.Zxid) []zab.Txn {
	t.Helper()
	var out []zab.Txn
	for tx, err := range l.Entries(after) {
		if err != nil {
			t.Fatalf("entries after %v: %v", after, err)
		}
		out = append(out, tx)
	}
	return out
}

func equalTxns(a, b []zab.Txn) bool {
	return slices.EqualFunc(a, b, func(x, y zab.Txn) bool { return x.Zxid == y.Zxid && bytes.Equal(x.Data, y.Data) })
}

func above(txns []zab.Txn, z zab.Zxid) []zab.Txn {
	var out []zab.Txn
	for _, t := range txns {
		if t.Zxid > z {
			out = append(out, t)
		}
	}
	return out
}

// logImpls runs a behaviour test against both implementations. reopen
// simulates a clean restart (Close then open again).
type logImpl struct {
	name   string
	open   func(t *testing.T) Log
	reopen func(t *testing.T, l Log) Log
}

func logImpls(t *testing.T) []logImpl {
	return []logImpl{
		{"file", func(t *testing.T) Log {
			dir := t.TempDir()
			l, err := OpenLog(dir, LogOptions{SegmentSize: 4 << 10}, nil) // small segments: many rolls
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l
		}, func(t *testing.T, l Log) Log {
			fl := l.(*FileLog)
			if err := fl.Close(); err != nil {
				t.Fatal(err)
			}
			n, err := OpenLog(fl.dir, fl.opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close() })
			return n
		}},
		{"mem", func(*testing.T) Log { return NewMemLog() }, func(t *testing.T, l Log) Log {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			l.(*MemLog).Crash()
			return l
		}},
	}
}

func TestLogAppendRead(t *testing.T) {
	for _, im := range logImpls(t) {
		t.Run(im.name, func(t *testing.T) {
			l := im.open(t)
			if l.FirstZxid() != 0 || l.LastZxid() != 0 || len(entries(t, l, 0)) != 0 {
				t.Fatalf("new log not empty")
			}
			zs := zxids(40)
			all := appendAll(t, l, zs, 300) // ~12 kB: several 4 kB segments
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				if l.FirstZxid() != zs[0] || l.LastZxid() != zs[len(zs)-1] {
					t.Errorf("round %d: first %v last %v", round, l.FirstZxid(), l.LastZxid())
				}
				for _, after := range []zab.Zxid{0, zs[0], zs[7], zs[19], zs[20] - 1, zs[20], zs[39], zs[39] + 1} {
					if got := entries(t, l, after); !equalTxns(got, above(all, after)) {
						t.Errorf("round %d: entries after %v: %d entries, want %d", round, after, len(got), len(above(all, after)))
					}
				}
				l = im.reopen(t, l)
			}
			if err := l.Append(txn(zs[39], 1)); !errors.Is(err, ErrOutOfOrder) {
				t.Errorf("append of an old zxid: %v", err)
			}
			// A rejected batch appends nothing.
			if err := l.Append(txn(zs[39]+1, 1), txn(zs[39]+1, 1)); !errors.Is(err, ErrOutOfOrder) || l.LastZxid() != zs[39] {
				t.Errorf("bad batch: %v, last %v", err, l.LastZxid())
			}
			if err := l.Append(txn(zs[39]+1, 1), txn(zs[39]+2, 1)); err != nil || l.LastZxid() != zs[39]+2 {
				t.Errorf("batch: %v, last %v", err, l.LastZxid())
			}
			// Stopping an iteration early is fine.
			for range l.Entries(0) {
				break
			}
		})
	}
}

func TestLogTruncate(t *testing.T) {
	for _, im := range logImpls(t) {
		t.Run(im.name, func(t *testing.T) {
			zs := zxids(40)
			for _, cut := range []int{39, 30, 20, 19, 5, 0, -1} {
				l := im.open(t)
				all := appendAll(t, l, zs, 300)
				after := zab.Zxid(0)
				if cut >= 0 {
					after = zs[cut]
				}
				if err := l.Truncate(after); err != nil {
					t.Fatal(err)
				}
				want := all[:cut+1]
				check := func(stage string) {
					if got := entries(t, l, 0); !equalTxns(got, want) {
						t.Errorf("cut %d %s: %d entries, want %d", cut, stage, len(got), len(want))
					}
					wantLast := zab.Zxid(0)
					if cut >= 0 {
						wantLast = zs[cut]
					}
					if l.LastZxid() != wantLast {
						t.Errorf("cut %d %s: last %v, want %v", cut, stage, l.LastZxid(), wantLast)
					}
				}
				check("after truncate")
				l = im.reopen(t, l)
				check("after reopen")
				// The log continues from the cut, in a new epoch.
				next := zab.MakeZxid(3, 1)
				if err := l.Append(txn(next, 10)); err != nil {
					t.Fatal(err)
				}
				want = append(want, txn(next, 10))
				l = im.reopen(t, l)
				if got := entries(t, l, 0); !equalTxns(got, want) {
					t.Errorf("cut %d: after append and reopen %d entries, want %d", cut, len(got), len(want))
				}
			}
		})
	}
}

func TestLogCompact(t *testing.T) {
	for _, im := range logImpls(t) {
		t.Run(im.name, func(t *testing.T) {
			l := im.open(t)
			zs := zxids(40)
			all := appendAll(t, l, zs, 300)
			if err := l.Compact(zs[25]); err != nil {
				t.Fatal(err)
			}
			got := entries(t, l, 0)
			// Everything above the compaction point stays; some at or below may too.
			if !equalTxns(above(got, zs[25]), above(all, zs[25])) || len(got) == len(all) {
				t.Errorf("after compact: %d entries (first %v)", len(got), l.FirstZxid())
			}
			if l.FirstZxid() != got[0].Zxid || l.FirstZxid() > zs[26] {
				t.Errorf("first %v, entries start at %v", l.FirstZxid(), got[0].Zxid)
			}
			if err := l.Compact(zs[39] + 100); err != nil || l.LastZxid() != zs[39] {
				t.Errorf("compact everything: %v, last %v", err, l.LastZxid())
			}
			if got := entries(t, l, 0); len(got) == 0 || got[len(got)-1].Zxid != zs[39] {
				t.Errorf("compaction dropped the last entry")
			}
		})
	}
}

func openFile(t *testing.T, dir string) *FileLog {
	t.Helper()
	l, err := OpenLog(dir, LogOptions{SegmentSize: 4 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(m)
	return m
}

// A crash while writing leaves a record cut short, a bad last record, or a
// zero-filled tail: opening cuts it off and keeps every complete record.
func TestLogTornTail(t *testing.T) {
	zs := zxids(10)
	cases := map[string]func(b []byte, lastStart int) []byte{
		"half header":  func(b []byte, s int) []byte { return b[:s+5] },
		"half payload": func(b []byte, s int) []byte { return b[:len(b)-7] },
		"zero tail":    func(b []byte, s int) []byte { return append(b[:s], make([]byte, 5000)...) },
		"bad last crc": func(b []byte, s int) []byte { b[len(b)-1] ^= 1; return b },
		"garbage len":  func(b []byte, s int) []byte { return append(b[:s], 0, 0, 0, 0, 0, 0) },
	}
	for name, tear := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := openFile(t, dir)
			all := appendAll(t, l, zs, 100)
			l.Close()
			segs := segments(t, dir)
			last := segs[len(segs)-1]
			b, _ := os.ReadFile(last)
			start := len(b) - (recordHeader + 8 + 100)
			os.WriteFile(last, tear(b, start), 0o644)
			l = openFile(t, dir)
			want := all[:len(all)-1]
			if got := entries(t, l, 0); !equalTxns(got, want) || l.LastZxid() != zs[8] {
				t.Fatalf("after torn tail: %d entries, last %v", len(got), l.LastZxid())
			}
			if fi, _ := os.Stat(last); fi.Size() != int64(start) {
				t.Errorf("segment not cut at %d: %d bytes", start, fi.Size())
			}
			if err := l.Append(txn(zs[9], 100)); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if got := entries(t, openFile(t, dir), 0); !equalTxns(got, all) {
				t.Errorf("after re-append: %d entries", len(got))
			}
		})
	}
}

// A segment whose only content is a partial header (crash right after the
// roll) disappears.
func TestLogTornNewSegment(t *testing.T) {
	dir := t.TempDir()
	l := openFile(t, dir)
	all := appendAll(t, l, zxids(4), 10)
	l.Close()
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%016x.log", uint64(zxids(5)[4]))), []byte("PLOG"), 0o644)
	l = openFile(t, dir)
	if got := entries(t, l, 0); !equalTxns(got, all) || len(segments(t, dir)) != 1 {
		t.Errorf("partial segment: %d entries, %d segments", len(got), len(segments(t, dir)))
	}
}

// Damage anywhere but the tail is an error naming the file and offset.
func TestLogCorruption(t *testing.T) {
	zs := zxids(45) // 13 records per 4 kB segment: the last one holds 6
	cases := []struct {
		name    string
		segment func(n int) int // which segment
		damage  func(b []byte)
	}{
		{"payload in last segment", func(n int) int { return n - 1 }, func(b []byte) { b[len(segMagic)+recordHeader+10] ^= 1 }},
		{"length in last segment", func(n int) int { return n - 1 }, func(b []byte) { b[len(segMagic)] ^= 1 }},
		{"payload in first segment", func(int) int { return 0 }, func(b []byte) { b[len(b)-3] ^= 1 }},
		{"first segment cut short", func(int) int { return 0 }, nil},
		{"magic", func(int) int { return 1 }, func(b []byte) { b[0] = 'X' }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openFile(t, dir)
			appendAll(t, l, zs, 300)
			l.Close()
			segs := segments(t, dir)
			p := segs[c.segment(len(segs))]
			b, _ := os.ReadFile(p)
			if c.damage == nil {
				b = b[:len(b)-10]
			} else {
				c.damage(b)
			}
			os.WriteFile(p, b, 0o644)
			_, err := OpenLog(dir, LogOptions{}, nil)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(p)) || !strings.Contains(err.Error(), "offset") && c.name != "magic" {
				t.Fatalf("open: %v", err)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, errTorn) {
				t.Errorf("error does not say corrupt or torn: %v", err)
			}
		})
	}
}

// Killing the process loses what was appended but not synced (still in the
// writer's buffer); what was synced survives, and a record the buffer had
// half written is cut off.
func TestLogKill(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir, LogOptions{SegmentSize: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	zs := zxids(400)
	all := appendAll(t, l, zs[:100], 1000)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, zs[100:], 1000) // ~300 kB: the 256 kB buffer flushes part of it
	// Kill: abandon l without Close; its buffer never reaches the file.
	l2 := openFile(t, dir)
	got := entries(t, l2, 0)
	if len(got) < len(all) || len(got) >= 400 {
		t.Fatalf("after kill: %d entries", len(got))
	}
	for i, tx := range got {
		if !equalTxns([]zab.Txn{tx}, []zab.Txn{txn(zs[i], 1000)}) {
			t.Fatalf("entry %d differs", i)
		}
	}
	l.f.Close() // release the abandoned descriptor
}

func TestLogClosed(t *testing.T) {
	l := openFile(t, t.TempDir())
	l.Close()
	if err := l.Append(txn(1, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("append after close: %v", err)
	}
	for _, err := range l.Entries(0) {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("entries after close: %v", err)
		}
	}
}

// A kill keeps what a completed sync covered: all of it after Sync, up to z after
// SyncThrough(z) (the simulator's disk completes syncs later than they are issued),
// and nothing of a later append.
func TestMemLogCrash(t *testing.T) {
	zs := zxids(6)
	for _, tc := range []struct {
		name string
		sync func(*MemLog)
		want int // entries left after the crash
	}{
		{"none", func(*MemLog) {}, 0},
		{"sync", func(l *MemLog) { l.Sync() }, 6},
		{"through the third", func(l *MemLog) { l.SyncThrough(zs[2]) }, 3},
		{"through a zxid between entries", func(l *MemLog) { l.SyncThrough(zs[2] + (zs[3]-zs[2])/2) }, 3},
		{"through the third after a sync of all", func(l *MemLog) { l.Sync(); l.SyncThrough(zs[2]) }, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewMemLog()
			appendAll(t, l, zs, 10)
			tc.sync(l)
			l.Crash()
			if got := entries(t, l, 0); len(got) != tc.want || tc.want > 0 && got[len(got)-1].Zxid != zs[tc.want-1] {
				t.Fatalf("%d entries after the crash, want %d (the first %d)", len(got), tc.want, tc.want)
			}
		})
	}
}
