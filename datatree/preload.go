package datatree

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"unsafe"
	"weak"
)

// Preload layout: PreloadNodeSize-byte znodes named %010d under PreloadPath.
const (
	PreloadPath     = "/preload"
	PreloadNodeSize = 1024
)

// Preload adds size bytes of deterministic pseudo-random data as persistent
// znodes under /preload (which must not exist yet), stamped with LastZxid and
// time 0, and returns how many data nodes it made. It is a harness feature for
// the snapshot-size sweeps, not a transaction: preload every replica the same
// way, or preload one and let synchronisation ship the snapshot.
func (t *Tree) Preload(size int64) (int, error) {
	if size < 0 {
		return 0, fmt.Errorf("datatree: preload size %d < 0", size)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes[PreloadPath] != nil {
		return 0, fmt.Errorf("datatree: preload: %s already exists", PreloadPath)
	}
	count := int((size + PreloadNodeSize - 1) / PreloadNodeSize)
	buf := preloadData(size)

	z := int64(t.lastZxid)
	root := t.nodes["/"]
	root.st.cversion++
	root.st.pzxid = z
	parent := &node{st: pstat{czxid: z, mzxid: z, pzxid: z, cversion: int32(count)}}
	t.link(PreloadPath, parent)
	parent.children = make(map[string]struct{}, count)
	grown := make(map[string]*node, len(t.nodes)+count) // spare the map its incremental growth
	for p, n := range t.nodes {
		grown[p] = n
	}
	t.nodes = grown
	nodes := make([]node, count) // one allocation for all nodes
	name := make([]byte, 0, 32)
	for i := range nodes {
		name = append(name[:0], PreloadPath+"/0000000000"...)
		digits := strconv.AppendInt(name[len(name):], int64(i), 10)
		copy(name[len(name)-len(digits):], digits) // right-align: %010d
		path := string(name)
		end := min(int64(i+1)*PreloadNodeSize, size)
		n := &nodes[i]
		n.data = buf[int64(i)*PreloadNodeSize : end : end]
		n.st = pstat{czxid: z, mzxid: z, pzxid: z}
		parent.children[path[len(PreloadPath)+1:]] = struct{}{}
		t.nodes[path] = n
		t.size += int64(len(path) + len(n.data))
	}
	return count, nil
}

// sharedPreload holds, by size, the data trees of one process preloaded last, weakly:
// every tree preloads the same bytes, and a node's data is never changed in place
// (setData replaces it), so the trees of one process (the simulator's servers, the
// local backend's) share one buffer instead of holding a copy each. A buffer no tree
// holds any more is collected as usual.
var sharedPreload struct {
	sync.Mutex
	bufs map[int64]weak.Pointer[byte]
}

// preloadData is size bytes of the preload's data, shared and read-only.
func preloadData(size int64) []byte {
	if size == 0 {
		return nil
	}
	sharedPreload.Lock()
	defer sharedPreload.Unlock()
	if p := sharedPreload.bufs[size].Value(); p != nil {
		return unsafe.Slice(p, size)
	}
	buf := make([]byte, size)
	fill(buf)
	if sharedPreload.bufs == nil {
		sharedPreload.bufs = map[int64]weak.Pointer[byte]{}
	}
	for k, w := range sharedPreload.bufs { // forget the collected ones
		if w.Value() == nil {
			delete(sharedPreload.bufs, k)
		}
	}
	sharedPreload.bufs[size] = weak.Make(&buf[0])
	return buf
}

// largestPreload is the largest preload buffer of this process still held, or nil.
// Every buffer is a prefix of the same stream (fill), so it holds the data of every
// smaller preload's nodes too.
func largestPreload() []byte {
	sharedPreload.Lock()
	defer sharedPreload.Unlock()
	var out []byte
	for size, w := range sharedPreload.bufs {
		if p := w.Value(); p != nil && size > int64(len(out)) {
			out = unsafe.Slice(p, size)
		}
	}
	return out
}

// preloadIndex is i for a preload node's path (PreloadPath/%010d), or -1.
func preloadIndex(path []byte) int64 {
	const prefix = PreloadPath + "/"
	if len(path) != len(prefix)+10 || string(path[:len(prefix)]) != prefix {
		return -1
	}
	var i int64
	for _, c := range path[len(prefix):] {
		if c < '0' || c > '9' {
			return -1
		}
		i = 10*i + int64(c-'0')
	}
	return i
}

// fill writes deterministic incompressible bytes (wyrand), several GB/s.
func fill(b []byte) {
	var x uint64 = 0x706f6c65 // "pole"
	next := func() uint64 {
		x += 0xa0761d6478bd642f
		hi, lo := bits.Mul64(x, x^0xe7037ed1a0b428db)
		return hi ^ lo
	}
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, next())
		b = b[8:]
	}
	var tail [8]byte
	binary.LittleEndian.PutUint64(tail[:], next())
	copy(b, tail[:])
}
