package storage

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

type snapImpl struct {
	name string
	open func(t *testing.T) SnapshotStore
}

func snapImpls() []snapImpl {
	return []snapImpl{
		{"file", func(t *testing.T) SnapshotStore {
			s, err := OpenSnapshots(t.TempDir(), SnapshotOptions{Fsync: true, Keep: 3}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"mem", func(*testing.T) SnapshotStore { return NewMemSnapshots(3) }},
	}
}

func writeSnap(t *testing.T, s SnapshotStore, z zab.Zxid, payload string) {
	t.Helper()
	k, err := s.Create(z)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(k, payload); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}

func readSnap(s SnapshotStore, z zab.Zxid) (string, error) {
	rc, err := s.Open(z)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func zxidsOf(ms []SnapshotMeta) []zab.Zxid {
	var out []zab.Zxid
	for _, m := range ms {
		out = append(out, m.Zxid)
	}
	return out
}

func TestSnapshotStore(t *testing.T) {
	for _, im := range snapImpls() {
		t.Run(im.name, func(t *testing.T) {
			s := im.open(t)
			if ms, err := s.List(); err != nil || len(ms) != 0 {
				t.Fatalf("new store: %v %v", ms, err)
			}
			writeSnap(t, s, 5, "five")
			ms, _ := s.List()
			if len(ms) != 1 || ms[0] != (SnapshotMeta{Zxid: 5, Size: 4}) {
				t.Errorf("list %+v", ms)
			}
			if got, err := readSnap(s, 5); got != "five" || err != nil {
				t.Errorf("read %q %v", got, err)
			}
			for _, z := range []zab.Zxid{7, 6, 8} {
				writeSnap(t, s, z, fmt.Sprint("snap ", z))
			}
			ms, _ = s.List()
			if got := fmt.Sprint(zxidsOf(ms)); got != "[0x8 0x7 0x6]" {
				t.Errorf("retention kept %s", got)
			}
			// Cancelled or unfinished snapshots are invisible.
			k, _ := s.Create(9)
			io.WriteString(k, "partial")
			k.Cancel()
			k, _ = s.Create(10)
			io.WriteString(k, "partial")
			ms, _ = s.List()
			if got := fmt.Sprint(zxidsOf(ms)); got != "[0x8 0x7 0x6]" {
				t.Errorf("unfinished snapshots listed: %s", got)
			}
			if err := s.DeleteAbove(6); err != nil {
				t.Fatal(err)
			}
			ms, _ = s.List()
			if got := fmt.Sprint(zxidsOf(ms)); got != "[0x6]" {
				t.Errorf("after DeleteAbove(6): %s", got)
			}
			if _, err := s.Open(8); err == nil {
				t.Errorf("deleted snapshot opens")
			}
		})
	}
}

func TestFileSnapshotDamage(t *testing.T) {
	dir := t.TempDir()
	s, _ := OpenSnapshots(dir, SnapshotOptions{}, nil)
	writeSnap(t, s, 1, "one")
	writeSnap(t, s, 2, "two two")
	writeSnap(t, s, 3, "three")
	// A crash mid-write leaves a .tmp: reopening removes it.
	k, _ := s.Create(4)
	io.WriteString(k, "unfinished")
	s, _ = OpenSnapshots(dir, SnapshotOptions{}, nil)
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) != 0 {
		t.Errorf("temp files left: %v", tmps)
	}
	// Flip a payload byte: listed (header and trailer are fine), but reading fails at the end.
	p2 := s.path(2)
	b, _ := os.ReadFile(p2)
	b[snapHeader+1] ^= 1
	os.WriteFile(p2, b, 0o644)
	if _, err := readSnap(s, 2); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p2) {
		t.Errorf("corrupt payload read: %v", err)
	}
	// Cut one short and break another's magic: both skipped by List, Open refuses.
	b, _ = os.ReadFile(s.path(3))
	os.WriteFile(s.path(3), b[:len(b)-1], 0o644)
	b, _ = os.ReadFile(s.path(1))
	b[0] = 'X'
	os.WriteFile(s.path(1), b, 0o644)
	ms, err := s.List()
	if got := fmt.Sprint(zxidsOf(ms)); err != nil || got != "[0x2]" {
		t.Errorf("list with damaged files: %s %v", got, err)
	}
	for _, z := range []zab.Zxid{1, 3} {
		if _, err := s.Open(z); !errors.Is(err, ErrCorrupt) {
			t.Errorf("open damaged %v: %v", z, err)
		}
	}
}

// workload is a reproducible stream of data tree txns with sessions,
// ephemerals, deletes, multis and failures.
func workload(n int) []zab.Txn {
	var out []zab.Txn
	for i := range n {
		z := zab.MakeZxid(zab.Epoch(1+i/100), uint32(i%100+1))
		sess := int64(1 + i%3)
		var op datatree.Op
		switch i % 10 {
		case 0:
			op = datatree.CreateSession(3000)
		case 1, 2:
			op = datatree.Create(fmt.Sprintf("/n%d", i%17), bytes.Repeat([]byte{byte(i)}, 200), datatree.Persistent)
		case 3:
			op = datatree.Create(fmt.Sprintf("/n%d/e-", i%17), nil, datatree.EphemeralSequential)
		case 4:
			op = datatree.SetData(fmt.Sprintf("/n%d", i%17), []byte(fmt.Sprint(i)), -1)
		case 5:
			op = datatree.Delete(fmt.Sprintf("/n%d", (i+3)%17), -1)
		case 6:
			op = datatree.Multi(datatree.Create(fmt.Sprintf("/m%d", i), nil, datatree.Persistent),
				datatree.Check(fmt.Sprintf("/n%d", i%17), int32(i%3)-1))
		case 7:
			op = datatree.CloseSession()
		default:
			op = datatree.Create("/seq-", []byte("s"), datatree.PersistentSequential)
		}
		out = append(out, zab.Txn{Zxid: z, Data: datatree.Txn{Session: sess, Time: int64(i), Op: op}.Marshal()})
	}
	return out
}

func treeAt(t *testing.T, txns []zab.Txn) *datatree.Tree {
	t.Helper()
	tr := datatree.New()
	for _, tx := range txns {
		if _, err := tr.ApplyEncoded(tx); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func treeBytes(t *testing.T, tr *datatree.Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sameTree(t *testing.T, got, want *datatree.Tree, what string) {
	t.Helper()
	if !bytes.Equal(treeBytes(t, got), treeBytes(t, want)) {
		t.Errorf("%s: recovered tree differs (last %v, want %v; %d nodes, want %d)",
			what, got.LastZxid(), want.LastZxid(), got.NodeCount(), want.NodeCount())
	}
}

type storeImpl struct {
	name    string
	open    func(t *testing.T) *Store
	restart func(t *testing.T, s *Store) *Store // a kill: unsynced appends are lost
}

func storeImpls() []storeImpl {
	return []storeImpl{
		{"file", func(t *testing.T) *Store {
			dir := t.TempDir()
			s, err := Open(dir, Options{SegmentSize: 32 << 10})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}, func(t *testing.T, s *Store) *Store {
			fl := s.Log.(*FileLog)
			fl.f.Close() // abandon the writer's buffer, as a killed process does
			n, err := Open(filepath.Dir(fl.dir), Options{SegmentSize: 32 << 10})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close() })
			return n
		}},
		{"mem", func(*testing.T) *Store { return NewMem() }, func(t *testing.T, s *Store) *Store {
			s.Log.(*MemLog).Crash()
			return s
		}},
	}
}

// Restart = newest snapshot + the log after it, and reproduces exactly the
// persisted state: what was synced, never less, never garbage.
func TestRecover(t *testing.T) {
	ctx := context.Background()
	txns := workload(1000)
	for _, im := range storeImpls() {
		t.Run(im.name, func(t *testing.T) {
			s := im.open(t)
			if tr, err := s.Recover(ctx); err != nil || tr.NodeCount() != datatree.New().NodeCount() {
				t.Fatalf("empty store: %v", err)
			}
			live := datatree.New()
			for i, tx := range txns[:700] {
				if err := s.Log.Append(tx); err != nil {
					t.Fatal(err)
				}
				live.ApplyEncoded(tx)
				if i%50 == 49 {
					s.Log.Sync()
				}
				if i == 299 || i == 599 {
					if _, err := s.Snapshot(live); err != nil {
						t.Fatal(err)
					}
				}
			}
			s.Log.Sync()
			for _, tx := range txns[700:] { // appended, never synced
				s.Log.Append(tx)
			}
			s = im.restart(t, s)
			tr, err := s.Recover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, tx := range txns {
				if tx.Zxid <= tr.LastZxid() {
					n++
				}
			}
			if n < 700 {
				t.Fatalf("recovered only %d of 700 synced txns", n)
			}
			sameTree(t, tr, treeAt(t, txns[:n]), "after kill")
			if im.name == "mem" && n != 700 {
				t.Errorf("mem: kept %d unsynced txns", n-700)
			}
			// The snapshot at 600 plus the log gives the same as a full replay.
			if ms, _ := s.Snapshots.List(); len(ms) != 2 || ms[0].Zxid != txns[599].Zxid {
				t.Errorf("snapshots %+v", ms)
			}
		})
	}
}

func TestRecoverSkipsCorruptSnapshot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := Open(dir, Options{})
	txns := workload(300)
	live := datatree.New()
	for i, tx := range txns {
		s.Log.Append(tx)
		live.ApplyEncoded(tx)
		if i == 99 || i == 199 {
			s.Log.Sync()
			s.Snapshot(live)
		}
	}
	s.Close()
	fs := s.Snapshots.(*FileSnapshots)
	b, _ := os.ReadFile(fs.path(txns[199].Zxid))
	b[len(b)/2] ^= 0xff
	os.WriteFile(fs.path(txns[199].Zxid), b, 0o644)
	s, _ = Open(dir, Options{})
	defer s.Close()
	tr, err := s.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, tr, live, "older snapshot + log")
	// With every snapshot bad, recovery refuses rather than silently starting empty.
	b, _ = os.ReadFile(fs.path(txns[99].Zxid))
	b[len(b)/2] ^= 0xff
	os.WriteFile(fs.path(txns[99].Zxid), b, 0o644)
	if _, err := s.Recover(ctx); !errors.Is(err, datatree.ErrSnapshotCorrupt) && !errors.Is(err, ErrCorrupt) {
		t.Errorf("all snapshots corrupt: %v", err)
	}
}

func TestStoreTruncate(t *testing.T) {
	ctx := context.Background()
	txns := workload(400)
	for _, im := range storeImpls() {
		t.Run(im.name, func(t *testing.T) {
			s := im.open(t)
			live := datatree.New()
			for i, tx := range txns {
				s.Log.Append(tx)
				live.ApplyEncoded(tx)
				if i == 149 || i == 349 {
					s.Snapshot(live)
				}
			}
			s.Log.Sync()
			if err := s.Truncate(txns[249].Zxid); err != nil {
				t.Fatal(err)
			}
			if ms, _ := s.Snapshots.List(); len(ms) != 1 || ms[0].Zxid != txns[149].Zxid {
				t.Errorf("snapshots after truncate: %+v", ms)
			}
			tr, err := s.Recover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sameTree(t, tr, treeAt(t, txns[:250]), "after truncate")
		})
	}
}

// Snapshot compacts the log only below the oldest retained snapshot, so
// recovery from that snapshot still finds every later txn.
func TestSnapshotCompactsLog(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{SegmentSize: 8 << 10, KeepSnapshots: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	txns := workload(900)
	live := datatree.New()
	for i, tx := range txns {
		s.Log.Append(tx)
		live.ApplyEncoded(tx)
		if i%300 == 299 {
			s.Snapshot(live)
		}
	}
	ms, _ := s.Snapshots.List()
	oldest := ms[len(ms)-1].Zxid
	if first := s.Log.FirstZxid(); first > oldest || first <= txns[100].Zxid {
		t.Errorf("log starts at %v; oldest snapshot %v", first, oldest)
	}
	// Recovering from the oldest snapshot alone still works.
	s.Snapshots.DeleteAbove(oldest)
	tr, err := s.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, tr, live, "oldest snapshot + log")
}

// The on-disk formats are pinned by golden files (-update to accept a change).
func TestFormatsGolden(t *testing.T) {
	seg := []byte(segMagic)
	for _, tx := range []zab.Txn{{Zxid: zab.MakeZxid(1, 1), Data: []byte("abc")}, {Zxid: zab.MakeZxid(1, 2)}} {
		seg = appendRecord(seg, tx)
	}
	got, err := DecodeSegment(seg)
	if err != nil || len(got) != 2 || string(got[0].Data) != "abc" {
		t.Fatalf("decode: %v %v", got, err)
	}
	s, _ := OpenSnapshots(t.TempDir(), SnapshotOptions{}, nil)
	writeSnap(t, s, zab.MakeZxid(1, 2), "payload")
	snap, _ := os.ReadFile(s.path(zab.MakeZxid(1, 2)))
	out := "segment:\n" + hex.Dump(seg) + "snapshot file:\n" + hex.Dump(snap)
	p := filepath.Join("testdata", "formats.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(p, []byte(out), 0o644)
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != out {
		t.Errorf("on-disk format changed:\n%s\nwant:\n%s", out, want)
	}
}

// A follower that diverged takes the leader's tree whole; a restart then
// gives the leader's state plus what was appended after.
func TestInstall(t *testing.T) {
	ctx := context.Background()
	txns := workload(300)
	for _, im := range storeImpls() {
		t.Run(im.name, func(t *testing.T) {
			s := im.open(t)
			// The follower logged txns up to 250 of its own history...
			for _, tx := range txns[:250] {
				s.Log.Append(tx)
			}
			s.Log.Sync()
			// ...and the leader's tree is at txn 200 of another history.
			leader := treeAt(t, workload(200))
			leader.Apply(txns[199].Zxid+1, datatree.Txn{Op: datatree.Create("/leader-only", nil, datatree.Persistent)})
			if _, err := s.Install(leader); err != nil {
				t.Fatal(err)
			}
			next := zab.Txn{Zxid: leader.LastZxid() + 1, Data: datatree.Txn{Op: datatree.Create("/after", nil, datatree.Persistent)}.Marshal()}
			if err := s.Log.Append(next); err != nil {
				t.Fatal(err)
			}
			s.Log.Sync()
			leader.ApplyEncoded(next)
			s = im.restart(t, s)
			tr, err := s.Recover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sameTree(t, tr, leader, "after install")
		})
	}
}

// syncCounter is a MemLog that counts its syncs.
type syncCounter struct {
	*MemLog
	n int
}

func (c *syncCounter) Sync() error { c.n++; return c.MemLog.Sync() }

// Persist syncs the log once for a Ready that appended, and not at all for one that
// did not (most Readies; with fsync on each sync is an fsync).
func TestPersistSyncsOnlyAppends(t *testing.T) {
	z := zab.Zxid(1<<32 | 1)
	for _, tc := range []struct {
		name string
		ops  []zab.Op
		want int
	}{
		{"nothing", nil, 0},
		{"hard state", []zab.Op{&zab.SetHardState{HardState: zab.HardState{AcceptedEpoch: 1, CurrentEpoch: 1}}}, 0},
		{"truncate", []zab.Op{&zab.Truncate{After: 0}}, 0},
		{"append", []zab.Op{&zab.Append{Txns: []zab.Txn{{Zxid: z, Data: []byte("x")}}}}, 1},
		{"two appends", []zab.Op{&zab.Append{Txns: []zab.Txn{{Zxid: z, Data: []byte("x")}}}, &zab.Append{Txns: []zab.Txn{{Zxid: z + 1, Data: []byte("y")}}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &syncCounter{MemLog: NewMemLog()}
			s := &Store{Log: l, Snapshots: NewMemSnapshots(0), State: &MemHardState{}}
			if _, err := s.Persist(tc.ops); err != nil {
				t.Fatal(err)
			}
			if l.n != tc.want {
				t.Fatalf("%d syncs, want %d", l.n, tc.want)
			}
			l.Crash()
			if got := l.LastZxid(); tc.want > 0 && got == 0 {
				t.Fatal("the appended entries did not survive a crash")
			}
		})
	}
}

// TestMemSnapshotsReuse: a dropped snapshot's buffer is written again by the next
// snapshot (compactions of a large tree allocate next to nothing), but never while a
// reader still holds it.
func TestMemSnapshotsReuse(t *testing.T) {
	const size = 1 << 20
	s := NewMemSnapshots(1)
	content := func(z zab.Zxid) []byte { return bytes.Repeat([]byte{byte(z)}, size) }
	write := func(z zab.Zxid) {
		k, err := s.Create(z)
		if err != nil {
			t.Fatal(err)
		}
		k.(*memSink).Grow(size)
		if _, err := k.Write(content(z)); err != nil {
			t.Fatal(err)
		}
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	held, err := s.Open(1) // open across the drop of 1 and two more snapshots
	if err != nil {
		t.Fatal(err)
	}
	write(2)
	write(3)
	if got, _ := io.ReadAll(held); !bytes.Equal(got, content(1)) {
		t.Errorf("a reader of a dropped snapshot read bytes another snapshot overwrote")
	}
	held.Close()
	if err := held.Close(); err == nil {
		t.Errorf("a second Close succeeded")
	}
	got := make([]byte, size)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for z := zab.Zxid(4); z < 14; z++ {
		src := content(z) // counted below: 10 MiB in all
		k, _ := s.Create(z)
		k.(*memSink).Grow(size)
		k.Write(src)
		k.Close()
		rc, err := s.Open(z)
		if err == nil {
			_, err = io.ReadFull(rc, got)
			rc.Close()
		}
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("snapshot %v read back wrong (%v)", z, err)
		}
	}
	runtime.ReadMemStats(&after)
	// The sources are 10 MiB; fresh sinks would add 11 more.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 15<<20 {
		t.Errorf("10 snapshots of 1 MiB allocated %d MiB: the dropped buffers were not reused", grew>>20)
	}
}

// TestMemSnapshotsShared: stores that write the same snapshot hold one copy of its
// bytes; one that writes other bytes, or a prefix, holds its own; and the shared
// bytes are reused (as a dropped snapshot's buffer) only once no store holds them.
func TestMemSnapshotsShared(t *testing.T) {
	const size = 1 << 20
	const z = zab.Zxid(1<<40 + 7) // a zxid no other test uses: the sharing is process-wide
	content := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
	write := func(s *MemSnapshots, z zab.Zxid, data []byte) {
		k, err := s.Create(z)
		if err != nil {
			t.Fatal(err)
		}
		k.(*memSink).Grow(size)
		for len(data) > 0 { // in pieces, as a tree is written
			n := min(len(data), 4096)
			if _, err := k.Write(data[:n]); err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(s *MemSnapshots, z zab.Zxid) []byte {
		b, err := readSnap(s, z)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(b)
	}
	a, b, c, d := NewMemSnapshots(1), NewMemSnapshots(1), NewMemSnapshots(1), NewMemSnapshots(1)
	write(a, z, content(1, size))
	write(b, z, content(1, size))
	if &a.snaps[z][0] != &b.snaps[z][0] {
		t.Error("two stores hold two copies of the same snapshot")
	}
	other := append(content(1, size/2), content(2, size/2)...)
	write(c, z, other)
	write(d, z, content(1, size/2))
	if !bytes.Equal(read(c, z), other) || !bytes.Equal(read(d, z), content(1, size/2)) {
		t.Fatal("a snapshot that parts from the shared one, or is a prefix of it, read back wrong")
	}
	if &c.snaps[z][0] == &a.snaps[z][0] || &d.snaps[z][0] == &a.snaps[z][0] {
		t.Error("a different snapshot shares the bytes")
	}
	// a drops its copy (keep 1) and writes into its spare: not the bytes b still holds.
	write(a, z+1, content(3, size))
	write(a, z+2, content(4, size))
	if !bytes.Equal(read(b, z), content(1, size)) {
		t.Fatal("a store reused shared bytes another store still held")
	}
	shared := &b.snaps[z][0]
	write(b, z+1, content(5, size)) // b was the last holder: its spare is the shared bytes
	if b.spare == nil || &b.spare[:1][0] != shared {
		t.Error("the last holder of shared bytes did not keep them as its spare")
	}
}

// TestMemSnapshotsOwned: a snapshot written with WriteOwned keeps its pieces (no
// copy) and reads back whole.
func TestMemSnapshotsOwned(t *testing.T) {
	s := NewMemSnapshots(1)
	k, _ := s.Create(5)
	pieces := [][]byte{[]byte("snap"), bytes.Repeat([]byte{7}, 1000), []byte("shot")}
	for _, p := range pieces {
		if _, err := k.(*memSink).WriteOwned(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if metas, _ := s.List(); len(metas) != 1 || metas[0].Size != 1008 {
		t.Errorf("list %+v, want one snapshot of 1008 bytes", metas)
	}
	if &s.parts[5][1][0] != &pieces[1][0] {
		t.Error("the pieces were copied")
	}
	rc, err := s.Open(5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, bytes.Join(pieces, nil)) {
		t.Errorf("read back %d bytes (%v)", len(got), err)
	}
	rc.Close()
	write := func(z zab.Zxid) { // a later snapshot drops it (keep 1)
		k, _ := s.Create(z)
		k.Write([]byte("next"))
		k.Close()
	}
	write(6)
	if _, err := s.Open(5); err == nil || len(s.parts) != 0 {
		t.Error("the dropped snapshot's pieces are still there")
	}
}

// TestSaveViewSizeHint: the room SaveView asks for holds a preloaded tree's snapshot,
// so the sink never grows by doubling.
func TestSaveViewSizeHint(t *testing.T) {
	tr := datatree.New()
	if _, err := tr.Preload(4 << 20); err != nil {
		t.Fatal(err)
	}
	size := tr.ApproximateSize()
	ms := NewMemSnapshots(1)
	v := tr.View()
	defer v.Close()
	if err := SaveView(ms, v); err != nil {
		t.Fatal(err)
	}
	metas, _ := ms.List()
	b := ms.snaps[metas[0].Zxid]
	// The allocator rounds a large buffer up to its 8 KiB pages; doubling would not stop there.
	if room := size + size/8; int64(len(b)) > room || int64(cap(b)) > room+8<<10 {
		t.Errorf("snapshot of %d bytes in %d of capacity: more than the %d SaveView asks for", len(b), cap(b), room)
	}
	t.Logf("tree %d bytes, snapshot %d (%.1f %% more)", size, len(b), 100*float64(int64(len(b))-size)/float64(size))
}

// TestMemSnapshotsSharedWrittenAtOnce: sinks of the same bytes written at the same
// time (two simulated runs booting at once), neither able to compare with the other
// while it writes, end up holding one copy; one whose bytes differ keeps its own.
func TestMemSnapshotsSharedWrittenAtOnce(t *testing.T) {
	const size = 1 << 20
	const z = zab.Zxid(1<<40 + 99) // a zxid no other test uses: the sharing is process-wide
	stores := []*MemSnapshots{NewMemSnapshots(1), NewMemSnapshots(1), NewMemSnapshots(1)}
	data := [][]byte{bytes.Repeat([]byte{1}, size), bytes.Repeat([]byte{1}, size), append(bytes.Repeat([]byte{1}, size-1), 2)}
	var sinks []SnapshotSink
	for _, s := range stores {
		k, err := s.Create(z)
		if err != nil {
			t.Fatal(err)
		}
		k.(*memSink).Grow(size)
		sinks = append(sinks, k)
	}
	for i, k := range sinks {
		if _, err := k.Write(data[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range sinks {
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range stores {
		if got, err := readSnap(s, z); err != nil || got != string(data[i]) {
			t.Fatalf("store %d read back wrong (%v)", i, err)
		}
	}
	a, b, c := &stores[0].snaps[z][0], &stores[1].snaps[z][0], &stores[2].snaps[z][0]
	if a != b {
		t.Error("two stores written at once hold two copies of the same snapshot")
	}
	if c == a {
		t.Error("a different snapshot shares the bytes")
	}
}
