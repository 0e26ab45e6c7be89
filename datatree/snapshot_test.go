package datatree

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/polebench/polebench/zab"
)

// smallTree has sessions, ephemerals, sequential and deleted children, data.
func smallTree(t testing.TB) *Tree {
	tr := New()
	for i, txn := range sampleTxns()[:9] {
		tr.Apply(zab.MakeZxid(1, uint32(i+1)), txn)
	}
	return tr
}

func TestSnapshotRoundTrip(t *testing.T) {
	for name, tr := range map[string]*Tree{"empty": New(), "small": smallTree(t), "random": randomTree(t)} {
		b := snapshotBytes(t, tr)
		got := New()
		got.Apply(1, Txn{Op: Create("/overwritten", nil, Persistent)})
		if err := got.ReadSnapshot(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(snapshotBytes(t, got), b) {
			t.Errorf("%s: snapshot does not round-trip", name)
		}
		if got.Exists("/overwritten") || got.LastZxid() != tr.LastZxid() ||
			got.ApproximateSize() != tr.ApproximateSize() || got.EphemeralCount() != tr.EphemeralCount() {
			t.Errorf("%s: loaded state differs", name)
		}
	}
}

func randomTree(t testing.TB) *Tree {
	tr := New()
	for i, txn := range randomTxns(7, 500) {
		tr.Apply(zab.Zxid(i+1), txn)
	}
	return tr
}

// The golden snapshot pins the format: a change must be deliberate (-update).
func TestSnapshotGolden(t *testing.T) {
	golden(t, "snapshot.golden", []byte(hex.Dump(snapshotBytes(t, smallTree(t)))))
}

// A snapshot written before ACLs (version 1) loads as the same tree.
func TestSnapshotVersion1(t *testing.T) {
	dump, err := os.ReadFile("testdata/snapshot.v1.golden")
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, line := range strings.Split(string(dump), "\n") {
		if len(line) < 10 {
			continue
		}
		hexPart, _, _ := strings.Cut(line[10:], "|")
		b, err := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	got, err := LoadSnapshot(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, got), snapshotBytes(t, smallTree(t))) {
		t.Error("the version 1 snapshot loads as another tree")
	}
}

// ACLs and null data survive a snapshot, and the open ACL is what a node without one reads.
func TestSnapshotACL(t *testing.T) {
	tr := New()
	acl := []ACL{{PermRead | PermAdmin, ID{"digest", "u:h="}}, {PermRead, ID{"ip", "10.0.0.0/8"}}}
	tr.Apply(1, Txn{Op: CreateACL("/p", []byte("x"), Persistent, acl)})
	tr.Apply(2, Txn{Op: Create("/o", nil, Persistent)})
	tr.Apply(3, Txn{Op: Create("/e", []byte{}, Persistent)})
	got, err := LoadSnapshot(bytes.NewReader(snapshotBytes(t, tr)))
	if err != nil {
		t.Fatal(err)
	}
	// Null and empty data differ, as in ZooKeeper.
	if d, _, _ := got.Get("/o"); d != nil {
		t.Errorf("/o (null data) reads %q", d)
	}
	if d, _, _ := got.Get("/e"); d == nil || len(d) != 0 {
		t.Errorf("/e (empty data) reads %#v", d)
	}
	for path, want := range map[string][]ACL{"/p": acl, "/o": OpenACL()} {
		if a, _, err := got.ACL(path); err != nil || !reflect.DeepEqual(a, want) {
			t.Errorf("%s: ACL %v, %v; want %v", path, a, err, want)
		}
	}
}

func TestReadSnapshotRejects(t *testing.T) {
	good := snapshotBytes(t, smallTree(t))
	check := func(name string, b []byte) {
		t.Helper()
		tr := smallTree(t)
		before := snapshotBytes(t, tr)
		if err := tr.ReadSnapshot(bytes.NewReader(b)); !errors.Is(err, ErrSnapshotCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
		if !bytes.Equal(before, snapshotBytes(t, tr)) {
			t.Errorf("%s: a failed load changed the tree", name)
		}
	}
	for n := 0; n < len(good); n++ {
		check("truncated", good[:n])
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x20
		check("flipped", b)
	}
	check("trailing", append(bytes.Clone(good), 0))
	// Structurally wrong but correctly checksummed streams.
	build := func(f func(w *testWriter)) []byte {
		w := &testWriter{}
		w.raw([]byte(snapMagic + "\x01"))
		w.raw(make([]byte, 8))
		f(w)
		return w.finish()
	}
	node := func(w *testWriter, path string, owner uint64) {
		w.str(path)
		for range 8 {
			w.uv(0)
		}
		w.u64(owner)
		w.uv(0)
	}
	check("no root", build(func(w *testWriter) { w.uv(0); w.uv(0) }))
	check("child before parent", build(func(w *testWriter) { w.uv(0); w.uv(2); node(w, "/", 0); node(w, "/a/b", 0) }))
	check("unsorted", build(func(w *testWriter) { w.uv(0); w.uv(3); node(w, "/", 0); node(w, "/b", 0); node(w, "/a", 0) }))
	check("bad path", build(func(w *testWriter) { w.uv(0); w.uv(2); node(w, "/", 0); node(w, "/a/", 0) }))
	check("orphan ephemeral", build(func(w *testWriter) { w.uv(0); w.uv(2); node(w, "/", 0); node(w, "/e", 5) }))
	check("child of ephemeral", build(func(w *testWriter) {
		w.uv(1)
		w.u64(5)
		w.uv(100)
		w.uv(3)
		node(w, "/", 0)
		node(w, "/e", 5)
		node(w, "/e/c", 0)
	}))
	check("zero session", build(func(w *testWriter) { w.uv(1); w.u64(0); w.uv(100); w.uv(1); node(w, "/", 0) }))
	check("huge data", build(func(w *testWriter) {
		w.uv(0)
		w.uv(1)
		w.str("/")
		for range 8 {
			w.uv(0)
		}
		w.u64(0)
		w.uv(MaxDataSize + 1)
	}))
	if err := New().ReadSnapshot(bytes.NewReader(build(func(w *testWriter) { w.uv(0); w.uv(1); node(w, "/", 0) }))); err != nil {
		t.Errorf("minimal valid snapshot: %v", err)
	}
}

// testWriter hand-builds snapshot streams for the rejection tests.
type testWriter struct{ b []byte }

func (w *testWriter) raw(p []byte) { w.b = append(w.b, p...) }
func (w *testWriter) uv(v uint64) {
	for v >= 0x80 {
		w.b = append(w.b, byte(v)|0x80)
		v >>= 7
	}
	w.b = append(w.b, byte(v))
}
func (w *testWriter) u64(v uint64) {
	for i := range 8 {
		w.b = append(w.b, byte(v>>(8*i)))
	}
}
func (w *testWriter) str(s string) { w.uv(uint64(len(s))); w.raw([]byte(s)) }
func (w *testWriter) finish() []byte {
	c := crc32c(w.b)
	return append(w.b, byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// A writer error surfaces.
func TestWriteSnapshotError(t *testing.T) {
	tr := smallTree(t)
	if err := tr.WriteSnapshot(failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("error %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestPreload(t *testing.T) {
	a := New()
	a.Apply(9, Txn{Op: Noop()})
	n, err := a.Preload(10*PreloadNodeSize + 100)
	if err != nil || n != 11 {
		t.Fatalf("preload: %d %v", n, err)
	}
	kids, st, _ := a.Children(PreloadPath)
	if len(kids) != 11 || kids[0] != "0000000000" || kids[10] != "0000000010" {
		t.Errorf("children %v", kids)
	}
	if st.Cversion != 11 || st.NumChildren != 11 || st.Czxid != 9 || st.Pzxid != 9 {
		t.Errorf("/preload stat %+v", st)
	}
	d, st, _ := a.Get(PreloadPath + "/0000000010")
	if len(d) != 100 || st.DataLength != 100 || st.Mzxid != 9 {
		t.Errorf("last node: %d bytes, stat %+v", len(d), st)
	}
	d0, _, _ := a.Get(PreloadPath + "/0000000000")
	d1, _, _ := a.Get(PreloadPath + "/0000000001")
	if len(d0) != PreloadNodeSize || bytes.Equal(d0, d1) || bytes.Count(d0, []byte{0}) > 32 {
		t.Errorf("preload data is not 1 kB of distinct pseudo-random bytes")
	}
	if want := int64(len(PreloadPath) + 11*len(PreloadPath+"/0000000000") + 10*PreloadNodeSize + 100); a.ApproximateSize()-New().ApproximateSize() != want {
		t.Errorf("size %d, want base + %d", a.ApproximateSize(), want)
	}
	b := New()
	b.Apply(9, Txn{Op: Noop()})
	b.Preload(10*PreloadNodeSize + 100)
	if !bytes.Equal(snapshotBytes(t, a), snapshotBytes(t, b)) {
		t.Errorf("preload is not deterministic")
	}
	if _, err := a.Preload(1); err == nil {
		t.Errorf("second preload accepted")
	}
	// A preloaded tree round-trips and can be changed like any other.
	c := New()
	if err := c.ReadSnapshot(bytes.NewReader(snapshotBytes(t, a))); err != nil {
		t.Fatal(err)
	}
	if r := c.Apply(10, Txn{Op: Delete(PreloadPath+"/0000000003", 0)}); r.Err != Ok {
		t.Errorf("delete preloaded: %v", r.Err)
	}
}

// TestLoadSharesPreload: a loaded snapshot's preloaded nodes share this process's
// preload bytes where they are equal, and keep their own where they differ.
func TestLoadSharesPreload(t *testing.T) {
	a := New()
	if _, err := a.Preload(5*PreloadNodeSize + 100); err != nil {
		t.Fatal(err)
	}
	a.Apply(1, Txn{Op: SetData(PreloadPath+"/0000000002", []byte("changed"), -1)})
	snap := snapshotBytes(t, a)
	b := New()
	if err := b.ReadSnapshot(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, b), snap) {
		t.Fatal("the loaded tree's snapshot differs")
	}
	// Any preload buffer of the process will do (another test's may be the largest).
	inPreload := func(d []byte) bool {
		sharedPreload.Lock()
		defer sharedPreload.Unlock()
		at := uintptr(unsafe.Pointer(&d[0]))
		for size, w := range sharedPreload.bufs {
			if p := w.Value(); p != nil && at >= uintptr(unsafe.Pointer(p)) && at < uintptr(unsafe.Pointer(p))+uintptr(size) {
				return true
			}
		}
		return false
	}
	for i, shared := range []bool{true, true, false, true, true, true} {
		p := fmt.Sprintf("%s/%010d", PreloadPath, i)
		if got := inPreload(b.nodes[p].data); got != shared {
			t.Errorf("%s: shares the preload's bytes %v, want %v", p, got, shared)
		}
	}
	runtime.KeepAlive(a)
}

// A view written while Apply goes on is the tree as it was when the view was taken:
// byte for byte the snapshot of a copy made at that instant.
func TestViewIsConsistentWhileApplying(t *testing.T) {
	tr := randomTree(t)
	want := snapshotBytes(t, tr.Clone())
	v := tr.View()
	// Everything Apply can do, to nodes that existed and to new ones, in random order.
	base := tr.LastZxid()
	for i, txn := range randomTxns(11, 500) {
		tr.Apply(base+zab.Zxid(i+1), txn)
	}
	var b bytes.Buffer
	if err := v.Write(&b); err != nil {
		t.Fatal(err)
	}
	v.Close()
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatal("the view is not the tree as it was when it was taken")
	}
	if v.Zxid() != base {
		t.Fatalf("view at %v, want %v", v.Zxid(), base)
	}
	if len(tr.views) != 0 {
		t.Fatal("a closed view is still saving state")
	}
	if bytes.Equal(snapshotBytes(t, tr), want) {
		t.Fatal("the applies changed nothing: the test tested nothing")
	}
}

// loadSplit feeds b to a Loader in pieces of the given sizes (cycled), as a follower
// receives a SNAP in chunks.
func loadSplit(b []byte, sizes ...int) (*Tree, error) {
	l := NewLoader()
	for i := 0; len(b) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(b))
		if _, err := l.Write(bytes.Clone(b[:n])); err != nil {
			return nil, err
		}
		b = b[n:]
	}
	return l.Tree()
}

// A snapshot loaded piece by piece, whatever the cuts (inside varints, paths, data,
// the checksum), is the tree loaded whole; a damaged one fails the same way.
func TestLoaderSplits(t *testing.T) {
	big := New()
	big.Apply(1, Txn{Op: Create("/big", bytes.Repeat([]byte("x"), 300_000), Persistent)}) // spans many pieces
	for name, tr := range map[string]*Tree{"small": smallTree(t), "random": randomTree(t), "big": big} {
		want := snapshotBytes(t, tr)
		for _, sizes := range [][]int{{1}, {2}, {3, 5, 7}, {64}, {1000, 1}, {65536}, {len(want)}} {
			got, err := loadSplit(want, sizes...)
			if err != nil {
				t.Fatalf("%s in pieces of %v: %v", name, sizes, err)
			}
			if !bytes.Equal(snapshotBytes(t, got), want) {
				t.Fatalf("%s in pieces of %v: loaded a different tree", name, sizes)
			}
		}
	}
	good := snapshotBytes(t, smallTree(t))
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x20
		if _, err := loadSplit(b, 3, 1); !errors.Is(err, ErrSnapshotCorrupt) {
			t.Errorf("byte %d flipped, loaded in pieces: %v", i, err)
		}
		if _, err := loadSplit(good[:i], 3, 1); !errors.Is(err, ErrSnapshotCorrupt) {
			t.Errorf("cut at byte %d, loaded in pieces: %v", i, err)
		}
	}
	if _, err := loadSplit(append(bytes.Clone(good), 1, 2), 5); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Errorf("trailing bytes loaded in pieces: %v", err)
	}
}

// A view written while another goroutine applies creates, deletes and changes among
// the nodes it is listing and writing is still the tree as it was when it was taken.
func TestViewWhileApplyingConcurrently(t *testing.T) {
	tr := New()
	n, err := tr.Preload(20_000 * PreloadNodeSize) // several listing batches
	if err != nil {
		t.Fatal(err)
	}
	want := snapshotBytes(t, tr.Clone())
	v := tr.View()
	done := make(chan struct{})
	applied := make(chan int)
	go func() {
		z, i := tr.LastZxid(), 0
		for ; ; i++ {
			select {
			case <-done:
				applied <- i
				return
			default:
			}
			z++
			victim := fmt.Sprintf("%s/%010d", PreloadPath, (i*7919)%n)
			var op Op
			switch i % 3 {
			case 0:
				op = Delete(victim, -1)
			case 1:
				op = Create(fmt.Sprintf("%s/new%06d", PreloadPath, i), []byte("x"), Persistent)
			default:
				op = SetData(victim, []byte("changed"), -1)
			}
			tr.Apply(z, Txn{Op: op})
		}
	}()
	var b bytes.Buffer
	err = v.Write(&b)
	close(done)
	changes := <-applied
	v.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("the view written beside %d changes is not the tree as it was when it was taken", changes)
	}
	if changes == 0 || bytes.Equal(snapshotBytes(t, tr), want) {
		t.Fatal("nothing was applied while the view was written: the test tested nothing")
	}
	t.Logf("%d changes applied while the view was written", changes)
}

// TestLoadReusesItsBuffer: LoadSnapshot reads the next chunk into the buffer of the
// last one when no loaded node kept bytes of it (a preloaded tree's nodes take the
// process's preload bytes), and never into one a node still holds.
func TestLoadReusesItsBuffer(t *testing.T) {
	a := New()
	if _, err := a.Preload(8 * loadChunk); err != nil {
		t.Fatal(err)
	}
	// Nodes of their own before, among and after the preloaded ones, over several
	// chunks: a buffer reused under them would change their data.
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000) }
	z := a.LastZxid()
	for i := range 3000 {
		z++
		mustApply(t, a, z, Txn{Op: Create(fmt.Sprintf("/a%04d", i), value(i), Persistent)})
	}
	for _, i := range []int{3, 2000, 5000} {
		z++
		mustApply(t, a, z, Txn{Op: SetData(fmt.Sprintf("%s/%010d", PreloadPath, i), value(i), -1)})
	}
	for i := range 3000 {
		z++
		mustApply(t, a, z, Txn{Op: Create(fmt.Sprintf("/z%04d", i), value(i), Persistent)})
	}
	snap := snapshotBytes(t, a)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := LoadSnapshot(bytes.NewReader(snap))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, b), snap) {
		t.Fatal("the loaded tree's snapshot differs: a reused buffer changed a node's data")
	}
	// Reading every chunk into a buffer of its own allocates the snapshot's size again.
	if got := after.TotalAlloc - before.TotalAlloc; got >= uint64(len(snap)) {
		t.Errorf("loading a %d-byte snapshot allocated %d bytes: its buffers were not reused", len(snap), got)
	}
	runtime.KeepAlive(a)
}

func mustApply(t *testing.T, tr *Tree, z zab.Zxid, txn Txn) {
	t.Helper()
	if r := tr.Apply(z, txn); r.Err != Ok {
		t.Fatalf("apply %v: %v", txn.Op, r.Err)
	}
}
