package datatree

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"maps"
	"runtime"
	"slices"

	"github.com/polebench/polebench/zab"
)

// Snapshot stream, version 2 (integers little endian or varint):
//
//	magic "PDTS" version:u8(2) lastZxid:u64
//	sessions:uvarint { id:u64 timeout:varint }
//	nodes:uvarint { path czxid mzxid pzxid ctime mtime version cversion aversion :varint
//	                ephemeralOwner:u64 data acl }      (paths in byte order)
//	crc32c:u32 of everything before
//
// acl and data are the txn encoding's (count 0: the open ACL; data length+1, 0 for
// null). Version 1, before ACLs, has no acl and data as length and bytes; it is still
// read.
//
// path and data are uvarint length + bytes; cversion is the stored create
// count. Paths in byte order put every parent before its children, and make
// the stream a function of the state alone: equal trees give equal bytes.
const (
	snapMagic   = "PDTS"
	snapVersion = 2
)

// ErrSnapshotCorrupt wraps every ReadSnapshot failure caused by the input.
var ErrSnapshotCorrupt = errors.New("datatree: corrupt snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type sumWriter struct {
	w   *bufio.Writer
	crc uint32
	buf []byte
	n   int // bytes since the last yield
}

func (s *sumWriter) write(p []byte) {
	s.crc = crc32.Update(s.crc, castagnoli, p)
	s.n += len(p)
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
// Apply saves the state a node had at the view's start before it first changes it
// (nil: it did not exist), so neither opening nor writing the view holds the tree for
// long.
type View struct {
	t        *Tree
	zxid     zab.Zxid
	sessions [][2]int64       // id, timeout
	pre      map[string]*node // guarded by t.mu
	closed   bool
}

// View opens a view of the tree now; Close releases it. Opening it holds Apply off
// only while it lists the sessions: Write lists the paths.
func (t *Tree) View() *View {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := &View{t: t, zxid: t.lastZxid, pre: map[string]*node{}}
	for id, s := range t.sessions {
		v.sessions = append(v.sessions, [2]int64{id, int64(s.timeout)})
	}
	t.views = append(t.views, v)
	return v
}

// paths lists, sorted, the paths the tree had when the view was opened. It walks the
// tree's map a batch at a time under the read lock, Apply going on in between (a
// map's iteration allows changes between its steps): of what it meets it skips the
// nodes created since (saved as nil), and it adds those deleted since, which it may
// not meet but whose state was saved.
func (v *View) paths() []string {
	t := v.t
	t.mu.RLock()
	paths := make([]string, 0, len(t.nodes))
	t.mu.RUnlock()
	next, stop := iter.Pull(maps.Keys(t.nodes))
	defer stop()
	for more := true; more; {
		t.mu.RLock()
		for range viewBatch {
			var p string
			if p, more = next(); !more {
				break
			}
			if n, saved := v.pre[p]; !saved || n != nil {
				paths = append(paths, p)
			}
		}
		t.mu.RUnlock()
		runtime.Gosched() // see yieldBytes
	}
	t.mu.RLock()
	for p, n := range v.pre {
		if n != nil {
			paths = append(paths, p)
		}
	}
	t.mu.RUnlock()
	slices.Sort(paths)
	return slices.Compact(paths) // a node changed but not deleted is met and saved
}

// ApproximateSize is the tree's ApproximateSize now, about the view's once encoded
// (a hint for buffers: the tree may have changed since the view opened).
func (v *View) ApproximateSize() int64 { return v.t.ApproximateSize() }

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

// yieldBytes is how much of a state a long job (writing or loading a snapshot) goes
// through between yields of the processor. Such a job is the node's longest CPU-bound
// work: without yielding, the commit pipeline's goroutines would wait behind it for up
// to the scheduler's 10 ms time slice at each of their hops, on a machine with few
// cores, and the more so with every replica of the local backend in one process.
const yieldBytes = 64 << 10

// Write writes the view in the snapshot format.
func (v *View) Write(w io.Writer) error {
	paths := v.paths()
	slices.SortFunc(v.sessions, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	s := &sumWriter{w: bufio.NewWriterSize(w, yieldBytes), buf: make([]byte, 0, 256)}
	s.buf = append(s.buf, snapMagic...)
	s.buf = append(s.buf, snapVersion)
	s.buf = binary.LittleEndian.AppendUint64(s.buf, uint64(v.zxid))
	s.buf = binary.AppendUvarint(s.buf, uint64(len(v.sessions)))
	for _, st := range v.sessions {
		s.buf = binary.LittleEndian.AppendUint64(s.buf, uint64(st[0]))
		s.buf = binary.AppendVarint(s.buf, st[1])
	}
	s.buf = binary.AppendUvarint(s.buf, uint64(len(paths)))
	s.flushBuf()
	batch := make([]node, 0, viewBatch)
	for start := 0; start < len(paths); start += viewBatch {
		paths := paths[start:min(start+viewBatch, len(paths))]
		batch = batch[:0]
		v.t.mu.RLock()
		for _, p := range paths {
			batch = append(batch, *v.node(p)) // every listed path existed at the start
		}
		v.t.mu.RUnlock()
		for i, p := range paths {
			n := &batch[i]
			b := binary.AppendUvarint(s.buf, uint64(len(p)))
			b = append(b, p...)
			for _, x := range []int64{n.st.czxid, n.st.mzxid, n.st.pzxid, n.st.ctime, n.st.mtime,
				int64(n.st.version), int64(n.st.cversion), int64(n.st.aversion)} {
				b = binary.AppendVarint(b, x)
			}
			b = binary.LittleEndian.AppendUint64(b, uint64(n.st.ephemeralOwner))
			if n.data == nil {
				b = append(b, 0)
			} else {
				b = binary.AppendUvarint(b, uint64(len(n.data))+1)
			}
			s.buf = b
			s.flushBuf()
			s.write(n.data)
			s.buf = appendACL(s.buf, n.acl)
			s.flushBuf()
			if s.n >= yieldBytes {
				runtime.Gosched()
				s.n = 0
			}
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
	if kindOf(parent.st.ephemeralOwner) == sessionNode {
		return fmt.Errorf("path %s is the child of an ephemeral", quote(path))
	}
	if o := n.st.ephemeralOwner; kindOf(o) == sessionNode && t.sessions[o] == nil {
		return fmt.Errorf("ephemeral %s owned by unknown session 0x%x", quote(path), o)
	}
	t.link(path, n)
	return nil
}
