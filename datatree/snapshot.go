package datatree

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"slices"

	"github.com/polebench/polebench/zab"
)

// Snapshot stream, version 1 (integers little endian or varint):
//
//	magic "PDTS" version:u8(1) lastZxid:u64
//	sessions:uvarint { id:u64 timeout:varint }
//	nodes:uvarint { path czxid mzxid pzxid ctime mtime version cversion aversion :varint
//	                ephemeralOwner:u64 data }          (paths in byte order)
//	crc32c:u32 of everything before
//
// path and data are uvarint length + bytes; cversion is the stored create
// count. Paths in byte order put every parent before its children, and make
// the stream a function of the state alone: equal trees give equal bytes.
const (
	snapMagic   = "PDTS"
	snapVersion = 1
)

// ErrSnapshotCorrupt wraps every ReadSnapshot failure caused by the input.
var ErrSnapshotCorrupt = errors.New("datatree: corrupt snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type sumWriter struct {
	w   *bufio.Writer
	crc uint32
	buf []byte
}

func (s *sumWriter) write(p []byte) {
	s.crc = crc32.Update(s.crc, castagnoli, p)
	s.w.Write(p) // bufio keeps the first error; Flush reports it
}

// flushBuf writes the scratch buffer of small fields.
func (s *sumWriter) flushBuf() {
	s.write(s.buf)
	s.buf = s.buf[:0]
}

// WriteSnapshot writes the tree's state in the snapshot format. It blocks Apply only
// while it lists the paths (see View), not while it writes.
func (t *Tree) WriteSnapshot(w io.Writer) error {
	v := t.View()
	defer v.Close()
	return v.Write(w)
}

// View is the tree as it was when View was called, which Apply may go on changing:
// Apply saves the state a node had at the view's start before it first changes it,
// so writing the view never holds the tree for long.
type View struct {
	t        *Tree
	zxid     zab.Zxid
	sessions [][2]int64 // id, timeout; sorted by id
	paths    []string
	pre      map[string]*node // guarded by t.mu
	closed   bool
}

// View opens a view of the tree now. Taking it holds Apply off for as long as listing
// every path takes (about 2 ms per 100,000 znodes); Close releases it.
func (t *Tree) View() *View {
	t.mu.Lock()
	v := &View{t: t, zxid: t.lastZxid, pre: map[string]*node{}, paths: make([]string, 0, len(t.nodes))}
	for p := range t.nodes {
		v.paths = append(v.paths, p)
	}
	for id, s := range t.sessions {
		v.sessions = append(v.sessions, [2]int64{id, int64(s.timeout)})
	}
	t.views = append(t.views, v)
	t.mu.Unlock()
	slices.Sort(v.paths)
	slices.SortFunc(v.sessions, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	return v
}

// Zxid is the last transaction the view includes.
func (v *View) Zxid() zab.Zxid { return v.zxid }

// Close stops Apply saving state for the view.
func (v *View) Close() {
	t := v.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if !v.closed {
		t.views = slices.DeleteFunc(t.views, func(x *View) bool { return x == v })
		v.closed = true
	}
}

// node is path's state at the view's start; the tree's lock must be held.
func (v *View) node(path string) *node {
	if n, ok := v.pre[path]; ok {
		return n
	}
	return v.t.nodes[path]
}

// viewBatch is how many znodes Write reads per hold of the tree's read lock.
const viewBatch = 512

// Write writes the view in the snapshot format.
func (v *View) Write(w io.Writer) error {
	s := &sumWriter{w: bufio.NewWriterSize(w, 1<<20), buf: make([]byte, 0, 256)}
	s.buf = append(s.buf, snapMagic...)
	s.buf = append(s.buf, snapVersion)
	s.buf = binary.LittleEndian.AppendUint64(s.buf, uint64(v.zxid))
	s.buf = binary.AppendUvarint(s.buf, uint64(len(v.sessions)))
	for _, st := range v.sessions {
		s.buf = binary.LittleEndian.AppendUint64(s.buf, uint64(st[0]))
		s.buf = binary.AppendVarint(s.buf, st[1])
	}
	s.buf = binary.AppendUvarint(s.buf, uint64(len(v.paths)))
	s.flushBuf()
	batch := make([]node, 0, viewBatch)
	for start := 0; start < len(v.paths); start += viewBatch {
		paths := v.paths[start:min(start+viewBatch, len(v.paths))]
		batch = batch[:0]
		v.t.mu.RLock()
		for _, p := range paths {
			batch = append(batch, *v.node(p)) // every listed path existed at the start
		}
		v.t.mu.RUnlock()
		// Writing a large state is the node's longest CPU-bound job: between batches
		// it lets the commit pipeline's goroutines run, which on a machine with few
		// cores would otherwise queue behind it.
		runtime.Gosched()
		for i, p := range paths {
			n := &batch[i]
			b := binary.AppendUvarint(s.buf, uint64(len(p)))
			b = append(b, p...)
			for _, x := range []int64{n.st.czxid, n.st.mzxid, n.st.pzxid, n.st.ctime, n.st.mtime,
				int64(n.st.version), int64(n.st.cversion), int64(n.st.aversion)} {
				b = binary.AppendVarint(b, x)
			}
			b = binary.LittleEndian.AppendUint64(b, uint64(n.st.ephemeralOwner))
			b = binary.AppendUvarint(b, uint64(len(n.data)))
			s.buf = b
			s.flushBuf()
			s.write(n.data)
		}
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], s.crc)
	s.w.Write(sum[:])
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("datatree: write snapshot: %w", err)
	}
	return nil
}

// snapReader reads and checksums the stream; the first error sticks.
type snapReader struct {
	r    *bufio.Reader
	crc  uint32
	off  int64
	err  error
	pend []byte // bytes read one at a time, not yet in crc
	slab []byte // backing store for small data, to spare the allocator
}

func (s *snapReader) sum() uint32 {
	s.crc = crc32.Update(s.crc, castagnoli, s.pend)
	s.pend = s.pend[:0]
	return s.crc
}

func (s *snapReader) fail(field string, err error) {
	if s.err == nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		s.err = fmt.Errorf("%w: %s at byte %d: %v", ErrSnapshotCorrupt, field, s.off, err)
	}
}

func (s *snapReader) ReadByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, err
	}
	if s.pend = append(s.pend, c); len(s.pend) == cap(s.pend) {
		s.sum()
	}
	s.off++
	return c, nil
}

func (s *snapReader) full(p []byte, field string) {
	if s.err != nil {
		return
	}
	n, err := io.ReadFull(s.r, p)
	s.sum()
	s.crc = crc32.Update(s.crc, castagnoli, p[:n])
	s.off += int64(n)
	if err != nil {
		s.fail(field, err)
	}
}

func (s *snapReader) u64(field string) uint64 {
	var b [8]byte
	s.full(b[:], field)
	return binary.LittleEndian.Uint64(b[:])
}

func (s *snapReader) uvarint(field string) uint64 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(s)
	if err != nil {
		s.fail(field, err)
	}
	return v
}

func (s *snapReader) varint(field string) int64 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(s)
	if err != nil {
		s.fail(field, err)
	}
	return v
}

func (s *snapReader) int32(field string) int32 {
	v := s.varint(field)
	if s.err == nil && v != int64(int32(v)) {
		s.fail(field, fmt.Errorf("%d overflows int32", v))
	}
	return int32(v)
}

// bytes reads a length-prefixed field of at most max bytes.
func (s *snapReader) bytes(field string, max int) []byte {
	n := s.uvarint(field + " length")
	if s.err == nil && n > uint64(max) {
		s.fail(field, fmt.Errorf("length %d exceeds %d", n, max))
	}
	if s.err != nil || n == 0 {
		return nil
	}
	var p []byte
	if n <= 4096 {
		if len(s.slab) < int(n) {
			s.slab = make([]byte, 256<<10)
		}
		p, s.slab = s.slab[:n:n], s.slab[n:]
	} else {
		p = make([]byte, n)
	}
	s.full(p, field)
	return p
}

// maxPath bounds a path in a snapshot; a real one fits in a request (jute.maxbuffer).
const maxPath = MaxDataSize

// ReadSnapshot replaces the tree's whole state with the snapshot read from r,
// which must end exactly where the snapshot does. On error the tree is unchanged.
func (t *Tree) ReadSnapshot(r io.Reader) error {
	n, err := readSnapshot(r)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nodes, t.sessions, t.lastZxid, t.size, t.ephemerals = n.nodes, n.sessions, n.lastZxid, n.size, n.ephemerals
	return nil
}

func readSnapshot(r io.Reader) (*Tree, error) {
	s := &snapReader{r: bufio.NewReaderSize(r, 256<<10), pend: make([]byte, 0, 64)}
	var hdr [5]byte
	s.full(hdr[:], "header")
	if s.err == nil && (string(hdr[:4]) != snapMagic || hdr[4] != snapVersion) {
		return nil, fmt.Errorf("%w: bad header %q (want %q version %d)", ErrSnapshotCorrupt, hdr[:], snapMagic, snapVersion)
	}
	t := &Tree{nodes: map[string]*node{}, sessions: map[int64]*session{}}
	t.lastZxid = zab.Zxid(s.u64("last zxid"))
	ns := s.uvarint("session count")
	for i := uint64(0); s.err == nil && i < ns; i++ {
		id := int64(s.u64("session id"))
		timeout := s.int32("session timeout")
		if s.err == nil && (id == 0 || timeout <= 0 || t.sessions[id] != nil) {
			s.fail("session", fmt.Errorf("bad or duplicate session 0x%x timeout %d", id, timeout))
		}
		t.sessions[id] = &session{timeout: timeout, ephemerals: map[string]struct{}{}}
	}
	nn := s.uvarint("node count")
	prev := ""
	for i := uint64(0); s.err == nil && i < nn; i++ {
		if i%viewBatch == 0 {
			runtime.Gosched() // a long load shares the CPU with the node's other work
		}
		path := string(s.bytes("path", maxPath))
		var st pstat
		st.czxid, st.mzxid, st.pzxid = s.varint("czxid"), s.varint("mzxid"), s.varint("pzxid")
		st.ctime, st.mtime = s.varint("ctime"), s.varint("mtime")
		st.version, st.cversion, st.aversion = s.int32("version"), s.int32("cversion"), s.int32("aversion")
		st.ephemeralOwner = int64(s.u64("ephemeral owner"))
		data := s.bytes("data", MaxDataSize)
		if s.err != nil {
			break
		}
		if err := t.addLoaded(path, prev, &node{data: data, st: st}); err != nil {
			s.fail(fmt.Sprintf("node %d", i), err)
			break
		}
		prev = path
	}
	if s.err == nil && t.nodes["/"] == nil {
		s.fail("nodes", errors.New("no root"))
	}
	if s.err != nil {
		return nil, s.err
	}
	want := s.sum()
	var sum [4]byte
	s.full(sum[:], "checksum")
	if s.err != nil {
		return nil, s.err
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, computed %08x", ErrSnapshotCorrupt, got, want)
	}
	if _, err := s.r.ReadByte(); err != io.EOF {
		if err == nil {
			err = errors.New("trailing bytes after the checksum")
		}
		return nil, fmt.Errorf("%w: %v", ErrSnapshotCorrupt, err)
	}
	return t, nil
}

// addLoaded inserts a node read from a snapshot after checking the invariants
// Apply maintains, so a loaded tree is as good as a built one.
func (t *Tree) addLoaded(path, prev string, n *node) error {
	if path == "/" {
		if prev != "" {
			return errors.New("root is not the first node")
		}
		t.nodes[path] = n
		t.size += 1 + int64(len(n.data))
		return nil
	}
	if path <= prev {
		return fmt.Errorf("path %s not after %s", quote(path), quote(prev))
	}
	if err := ValidatePath(path); err != nil {
		return err
	}
	parent := t.nodes[parentOf(path)]
	if parent == nil {
		return fmt.Errorf("path %s has no parent", quote(path))
	}
	if parent.st.ephemeralOwner != 0 {
		return fmt.Errorf("path %s is the child of an ephemeral", quote(path))
	}
	if o := n.st.ephemeralOwner; o != 0 && t.sessions[o] == nil {
		return fmt.Errorf("ephemeral %s owned by unknown session 0x%x", quote(path), o)
	}
	t.link(path, n)
	return nil
}
