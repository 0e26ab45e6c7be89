package datatree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"

	"github.com/polebench/polebench/zab"
)

// Loader builds a tree from a snapshot stream that arrives in pieces: a follower
// receiving a SNAP feeds it each chunk as it comes, so loading is spread over the
// transfer and done when the last chunk is, instead of parsing the whole state again
// at the end. The loaded znodes' data aliases the buffers written (no copy): Write
// takes ownership of p. A Loader is for one goroutine.
type Loader struct {
	t     *Tree
	v1    bool // a version 1 stream: nodes have no ACL
	phase loadPhase
	left  uint64 // sessions or nodes still to read in this phase
	prev  string // the last node's path: paths ascend
	crc   uint32
	off   int64  // stream bytes consumed
	carry []byte // the start of an item split across writes
	slab  []node // znodes are allocated in blocks
	err   error
	// preload is this process's preload data (largestPreload), once a preloaded node
	// is read: a node whose data equals its part of it shares those bytes, and the
	// stream's buffer that held them can go (a snapshot of a preloaded tree loaded
	// beside the trees that preloaded it is otherwise a second copy of their data).
	preload []byte
	// aliased says a node loaded since it was last cleared keeps bytes of what was
	// written (LoadSnapshot reuses its buffer while none does).
	aliased bool

	sinceYield int // bytes loaded since the processor was last yielded
}

type loadPhase uint8

const (
	loadHeader loadPhase = iota
	loadSessionCount
	loadSessions
	loadNodeCount
	loadNodes
	loadChecksum
	loadDone
)

// phaseField names what each phase reads, for errors.
var phaseField = [...]string{"header", "session count", "session", "node count", "node", "checksum", "end"}

// NewLoader starts loading a snapshot.
func NewLoader() *Loader {
	return &Loader{t: &Tree{nodes: map[string]*node{}, sessions: map[int64]*session{}, extended: map[string]struct{}{}}}
}

// Write loads every item p completes. It fails, with an ErrSnapshotCorrupt error that
// sticks, at the first malformed one. p must not be modified afterwards.
func (l *Loader) Write(p []byte) (int, error) {
	n := len(p)
	// An item split across writes grows by what it is known to need (never past its
	// end) until it parses.
	for l.err == nil && len(l.carry) > 0 {
		used, need := l.item(l.carry)
		if l.err != nil {
			break
		}
		if need == 0 {
			if used != len(l.carry) {
				l.err = fmt.Errorf("datatree: loader parsed %d of a %d-byte item", used, len(l.carry))
			}
			l.carry = nil // what was loaded from it aliases it
			break
		}
		if len(p) == 0 {
			return n, nil
		}
		take := min(len(p), need-len(l.carry))
		l.carry = append(l.carry, p[:take]...)
		p = p[take:]
	}
	if l.err == nil && len(p) > 0 {
		if used := l.items(p); l.err == nil && used < len(p) {
			l.carry = append([]byte(nil), p[used:]...)
		}
	}
	return n, l.err
}

// items loads the whole items at the start of b and returns the bytes they took.
func (l *Loader) items(b []byte) int {
	used := 0
	for l.err == nil && used < len(b) {
		n, need := l.item(b[used:])
		if need > 0 || l.err != nil {
			break
		}
		used += n
	}
	return used
}

// item parses the item at the start of b. Complete, it loads it and returns its
// length; cut short, it changes nothing and returns how many bytes it needs at least
// (more than len(b)); malformed, it sets l.err.
func (l *Loader) item(b []byte) (n, need int) {
	if l.phase == loadDone {
		l.fail("end", errors.New("trailing bytes after the checksum"))
		return 0, 0
	}
	c := cursor{b: b}
	switch l.phase {
	case loadHeader:
		h := c.fixed(5)
		z := c.fixed(8)
		if c.need > 0 {
			break
		}
		if string(h[:4]) != snapMagic || (h[4] != snapVersion && h[4] != 1) {
			l.err = fmt.Errorf("%w: bad header %q (want %q version %d)", ErrSnapshotCorrupt, h, snapMagic, snapVersion)
			return 0, 0
		}
		l.v1 = h[4] == 1
		l.t.lastZxid = zab.Zxid(binary.LittleEndian.Uint64(z))
		l.phase = loadSessionCount
	case loadSessionCount, loadNodeCount:
		v := c.uvarint(phaseField[l.phase])
		if c.need > 0 || l.check(&c) {
			break
		}
		l.left = v
		l.phase++
	case loadSessions:
		id := int64(c.u64("session id"))
		timeout := c.int32("session timeout")
		if c.need > 0 || l.check(&c) {
			break
		}
		if id == 0 || timeout <= 0 || l.t.sessions[id] != nil {
			l.fail("session", fmt.Errorf("bad or duplicate session 0x%x timeout %d", id, timeout))
			break
		}
		l.t.sessions[id] = &session{timeout: timeout, ephemerals: map[string]struct{}{}}
		l.left--
	case loadNodes:
		path := c.bytes("path", maxPath)
		var st pstat
		st.czxid, st.mzxid, st.pzxid = c.varint("czxid"), c.varint("mzxid"), c.varint("pzxid")
		st.ctime, st.mtime = c.varint("ctime"), c.varint("mtime")
		st.version, st.cversion, st.aversion = c.int32("version"), c.int32("cversion"), c.int32("aversion")
		st.ephemeralOwner = int64(c.u64("ephemeral owner"))
		var data []byte
		var acl []ACL
		if l.v1 {
			data = c.bytes("data", MaxDataSize)
		} else {
			data = c.data()
			acl = c.acl()
		}
		if c.need > 0 || l.check(&c) {
			break
		}
		if len(l.slab) == 0 {
			l.slab = make([]node, min(l.left, 1024))
		}
		nd := &l.slab[0]
		l.slab = l.slab[1:]
		*nd = node{data: data, acl: acl, st: st}
		if len(data) == 0 {
			nd.data = nil
			if data != nil && !l.v1 {
				nd.data = []byte{} // empty, not null
			}
		} else if i := preloadIndex(path); i >= 0 {
			nd.data = l.sharePreload(i*PreloadNodeSize, data)
		}
		if len(nd.data) > 0 && &nd.data[0] == &data[0] {
			l.aliased = true
		}
		p := string(path)
		if err := l.t.addLoaded(p, l.prev, nd); err != nil {
			l.fail(fmt.Sprintf("node %s", quote(p)), err)
			break
		}
		l.prev = p
		l.left--
	case loadChecksum:
		sum := c.fixed(4)
		if c.need > 0 {
			break
		}
		if got := binary.LittleEndian.Uint32(sum); got != l.crc {
			l.err = fmt.Errorf("%w: checksum %08x, computed %08x", ErrSnapshotCorrupt, got, l.crc)
			break
		}
		l.phase = loadDone
		l.off += int64(c.i)
		return c.i, 0
	}
	if c.need > 0 || l.err != nil {
		return 0, c.need
	}
	l.crc = crc32.Update(l.crc, castagnoli, b[:c.i])
	l.off += int64(c.i)
	if l.sinceYield += c.i; l.sinceYield >= yieldBytes {
		runtime.Gosched() // see yieldBytes
		l.sinceYield = 0
	}
	for (l.phase == loadSessions || l.phase == loadNodes) && l.left == 0 {
		if l.phase == loadNodes && l.t.nodes["/"] == nil {
			l.fail("nodes", errors.New("no root"))
		}
		l.phase++
	}
	return c.i, 0
}

// check turns a malformed field of c into the loader's error; it reports whether
// there was one.
func (l *Loader) check(c *cursor) bool {
	if c.err != nil {
		l.err = fmt.Errorf("%w: %s at byte %d: %v", ErrSnapshotCorrupt, c.field, l.off+int64(c.errAt), c.err)
	}
	return c.err != nil
}

func (l *Loader) fail(field string, err error) {
	if l.err == nil {
		l.err = fmt.Errorf("%w: %s at byte %d: %v", ErrSnapshotCorrupt, field, l.off, err)
	}
}

// Tree ends the stream: the loaded tree, or why the stream was not a snapshot.
func (l *Loader) Tree() (*Tree, error) {
	if l.err == nil && l.phase != loadDone {
		l.fail(phaseField[l.phase], io.ErrUnexpectedEOF)
	}
	if l.err != nil {
		return nil, l.err
	}
	return l.t, nil
}

// cursor reads one item's fields from a buffer that may end before the item does;
// then need is the length that would get further.
type cursor struct {
	b     []byte
	i     int
	need  int
	err   error
	field string
	errAt int
}

func (c *cursor) ok() bool { return c.need == 0 && c.err == nil }

func (c *cursor) short(n int) { c.need = max(n, len(c.b)+1) }

func (c *cursor) bad(field string, err error) {
	c.field, c.err, c.errAt = field, err, c.i
}

func (c *cursor) fixed(n int) []byte {
	if !c.ok() {
		return nil
	}
	if len(c.b)-c.i < n {
		c.short(c.i + n)
		return nil
	}
	c.i += n
	return c.b[c.i-n : c.i]
}

func (c *cursor) u64(field string) uint64 {
	if b := c.fixed(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (c *cursor) uvarint(field string) uint64 {
	if !c.ok() {
		return 0
	}
	v, n := binary.Uvarint(c.b[c.i:])
	switch {
	case n == 0:
		c.short(len(c.b) + 1)
	case n < 0:
		c.bad(field, errors.New("varint overflows a 64-bit integer"))
	default:
		c.i += n
	}
	return v
}

func (c *cursor) varint(field string) int64 {
	u := c.uvarint(field)
	return int64(u>>1) ^ -int64(u&1) // zigzag, as binary.Varint
}

func (c *cursor) int32(field string) int32 {
	v := c.varint(field)
	if c.ok() && v != int64(int32(v)) {
		c.bad(field, fmt.Errorf("%d overflows int32", v))
	}
	return int32(v)
}

// bytes reads a uvarint length and that many bytes, at most max.
func (c *cursor) bytes(field string, max int) []byte {
	n := c.uvarint(field + " length")
	if c.ok() && n > uint64(max) {
		c.bad(field, fmt.Errorf("length %d exceeds %d", n, max))
	}
	p := c.fixed(int(min(n, uint64(max))))
	return p[:len(p):len(p)]
}

// sharePreload is the preload's bytes at off if they equal data, else data.
func (l *Loader) sharePreload(off int64, data []byte) []byte {
	end := off + int64(len(data))
	if int64(len(l.preload)) < end {
		l.preload = largestPreload()
	}
	if int64(len(l.preload)) < end || !bytes.Equal(l.preload[off:end], data) {
		return data
	}
	return l.preload[off:end:end]
}

// maxPath bounds a path in a snapshot; a real one fits in a request (jute.maxbuffer).
const maxPath = MaxDataSize

// loadChunk is how much ReadSnapshot reads at a time.
const loadChunk = 1 << 20

// ReadSnapshot replaces the tree's whole state with the snapshot read from r,
// which must end exactly where the snapshot does. On error the tree is unchanged.
func (t *Tree) ReadSnapshot(r io.Reader) error {
	n, err := LoadSnapshot(r)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nodes, t.sessions, t.lastZxid, t.size, t.ephemerals = n.nodes, n.sessions, n.lastZxid, n.size, n.ephemerals
	return nil
}

// LoadSnapshot reads a snapshot from r into a new tree.
func LoadSnapshot(r io.Reader) (*Tree, error) {
	l := NewLoader()
	var b []byte
	for {
		if b == nil {
			b = make([]byte, loadChunk)
		}
		n, err := io.ReadFull(r, b)
		if n > 0 {
			l.aliased = false
			if _, err := l.Write(b[:n:n]); err != nil {
				return nil, err
			}
			if l.aliased {
				b = nil // the loaded data aliases it: never reused
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return l.Tree()
		}
		if err != nil {
			return nil, fmt.Errorf("datatree: read snapshot: %w", err)
		}
	}
}

// data reads a node's data in the version 2 encoding: length+1, 0 for null.
func (c *cursor) data() []byte {
	n := c.uvarint("data length")
	if !c.ok() || n == 0 {
		return nil
	}
	if n-1 > MaxDataSize {
		c.bad("data", fmt.Errorf("length %d exceeds %d", n-1, MaxDataSize))
		return nil
	}
	p := c.fixed(int(n - 1))
	if p == nil {
		return nil
	}
	return p[:len(p):len(p)]
}

// maxACL bounds a snapshot node's ACL entries (ZooKeeper's frame limit bounds a
// client's; this only keeps a corrupt count from allocating).
const maxACL = 1 << 16

// acl reads an ACL in the txn encoding; count 0 is the open ACL (nil).
func (c *cursor) acl() []ACL {
	n := c.uvarint("acl count")
	if c.ok() && n > maxACL {
		c.bad("acl count", fmt.Errorf("%d entries exceed %d", n, maxACL))
	}
	if !c.ok() || n == 0 {
		return nil
	}
	out := make([]ACL, 0, n)
	for range n {
		perms := c.int32("acl perms")
		scheme := c.bytes("acl scheme", maxPath)
		id := c.bytes("acl id", maxPath)
		if !c.ok() {
			return nil
		}
		out = append(out, ACL{Perms: perms, ID: ID{string(scheme), string(id)}})
	}
	return out
}
