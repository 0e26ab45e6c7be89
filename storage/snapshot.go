package storage

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
	"weak"

	"github.com/polebench/polebench/zab"
)

// SnapshotMeta describes a stored snapshot.
type SnapshotMeta struct {
	Zxid zab.Zxid // the last transaction it covers
	Size int64    // payload bytes
}

// SnapshotSink receives a snapshot's payload. Close commits it atomically;
// Cancel (or an error) leaves no trace.
type SnapshotSink interface {
	io.Writer
	Close() error
	Cancel() error
}

// SnapshotStore keeps snapshots, each an opaque stream (the data tree's
// snapshot format) labelled with the zxid it covers.
type SnapshotStore interface {
	// Create starts a snapshot covering zxid.
	Create(zxid zab.Zxid) (SnapshotSink, error)
	// List returns the complete snapshots, newest first.
	List() ([]SnapshotMeta, error)
	// Open streams a snapshot's payload. If the content does not match its
	// checksum, the reader returns an ErrCorrupt error instead of io.EOF.
	Open(zxid zab.Zxid) (io.ReadCloser, error)
	// DeleteAbove removes the snapshots covering more than zxid (with a log Truncate).
	DeleteAbove(zxid zab.Zxid) error
}

// SnapshotOptions configure a FileSnapshots.
type SnapshotOptions struct {
	Fsync bool // fsync the file and directory before a snapshot counts as made
	Keep  int  // number of newest snapshots retained; default 3
}

// Snapshot file snap-%016x.snap:
//
//	magic "PSNAP001" zxid:u64 payload size:u64 crc:u32 "PSNE"
//
// crc is CRC32C of header and payload. Written as .tmp, then renamed.
const (
	snapMagic   = "PSNAP001"
	snapEnd     = "PSNE"
	snapHeader  = 16
	snapTrailer = 16
	snapPrefix  = "snap-"
	snapSuffix  = ".snap"
)

// FileSnapshots is the SnapshotStore in a directory.
type FileSnapshots struct {
	mu     sync.Mutex // serialises commits and retention
	dir    string
	opts   SnapshotOptions
	logger *slog.Logger
}

var _ SnapshotStore = (*FileSnapshots)(nil)

// OpenSnapshots opens (creating if needed) the snapshot directory and removes
// temporary files a crash left behind.
func OpenSnapshots(dir string, opts SnapshotOptions, logger *slog.Logger) (*FileSnapshots, error) {
	if opts.Keep <= 0 {
		opts.Keep = 3
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: open snapshots: %w", err)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, snapPrefix+"*"+snapSuffix+".tmp"))
	for _, p := range tmps {
		logger.Info("removing unfinished snapshot", "file", p)
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("storage: open snapshots: %w", err)
		}
	}
	return &FileSnapshots{dir: dir, opts: opts, logger: logger}, nil
}

func (s *FileSnapshots) path(z zab.Zxid) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%016x%s", snapPrefix, uint64(z), snapSuffix))
}

type fileSink struct {
	s      *FileSnapshots
	zxid   zab.Zxid
	f      *os.File
	w      *bufio.Writer
	crc    uint32
	n      int64
	err    error
	closed bool
}

// Create implements SnapshotStore.
func (s *FileSnapshots) Create(zxid zab.Zxid) (SnapshotSink, error) {
	f, err := os.OpenFile(s.path(zxid)+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: create snapshot: %w", err)
	}
	k := &fileSink{s: s, zxid: zxid, f: f, w: bufio.NewWriterSize(f, 1<<20)}
	h := append([]byte(snapMagic), make([]byte, 8)...)
	binary.LittleEndian.PutUint64(h[8:], uint64(zxid))
	k.crc = crc32.Checksum(h, castagnoli)
	k.w.Write(h)
	return k, nil
}

func (k *fileSink) Write(p []byte) (int, error) {
	if k.closed {
		return 0, ErrClosed
	}
	if k.err != nil {
		return 0, k.err
	}
	n, err := k.w.Write(p)
	k.crc = crc32.Update(k.crc, castagnoli, p[:n])
	k.n += int64(n)
	if err != nil {
		k.err = fmt.Errorf("storage: write snapshot: %w", err)
	}
	return n, k.err
}

func (k *fileSink) Cancel() error {
	if k.closed {
		return nil
	}
	k.closed = true
	k.f.Close()
	return os.Remove(k.f.Name())
}

// Close writes the trailer, makes the file durable, renames it into place and
// applies retention.
func (k *fileSink) Close() error {
	if k.closed {
		return ErrClosed
	}
	if err := k.commit(); err != nil {
		k.Cancel()
		return fmt.Errorf("storage: snapshot %v: %w", k.zxid, err)
	}
	k.closed = true
	return k.s.retain()
}

func (k *fileSink) commit() error {
	if k.err != nil {
		return k.err
	}
	t := binary.LittleEndian.AppendUint64(nil, uint64(k.n))
	t = binary.LittleEndian.AppendUint32(t, k.crc)
	k.w.Write(append(t, snapEnd...))
	if err := k.w.Flush(); err != nil {
		return err
	}
	if k.s.opts.Fsync {
		if err := k.f.Sync(); err != nil {
			return err
		}
	}
	if err := k.f.Close(); err != nil {
		return err
	}
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	if err := os.Rename(k.f.Name(), k.s.path(k.zxid)); err != nil {
		return err
	}
	if k.s.opts.Fsync {
		return syncDir(k.s.dir)
	}
	return nil
}

func (s *FileSnapshots) retain() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	metas, err := s.list()
	if err != nil {
		return err
	}
	for _, m := range metas[min(s.opts.Keep, len(metas)):] {
		if err := os.Remove(s.path(m.Zxid)); err != nil {
			return fmt.Errorf("storage: snapshot retention: %w", err)
		}
	}
	return nil
}

// List implements SnapshotStore. It checks each file's header and trailer
// (not the checksum, which Open verifies while streaming) and skips bad ones.
func (s *FileSnapshots) List() ([]SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list()
}

func (s *FileSnapshots) list() ([]SnapshotMeta, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list snapshots: %w", err)
	}
	var out []SnapshotMeta
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), snapPrefix)
		name, ok2 := strings.CutSuffix(name, snapSuffix)
		if !ok || !ok2 || len(name) != 16 {
			continue
		}
		z, err := strconv.ParseUint(name, 16, 64)
		if err != nil {
			continue
		}
		f, size, err := s.openChecked(zab.Zxid(z))
		if err != nil {
			s.logger.Warn("skipping bad snapshot", "err", err)
			continue
		}
		f.Close()
		out = append(out, SnapshotMeta{Zxid: zab.Zxid(z), Size: size})
	}
	slices.Reverse(out) // ReadDir sorts by name, i.e. by zxid
	return out, nil
}

// openChecked opens a snapshot file and checks its header and trailer.
func (s *FileSnapshots) openChecked(z zab.Zxid) (*os.File, int64, error) {
	p := s.path(z)
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, fmt.Errorf("storage: open snapshot: %w", err)
	}
	bad := func(why string, args ...any) (*os.File, int64, error) {
		f.Close()
		return nil, 0, fmt.Errorf("storage: snapshot %s: %w: %s", p, ErrCorrupt, fmt.Sprintf(why, args...))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("storage: open snapshot: %w", err)
	}
	if st.Size() < snapHeader+snapTrailer {
		return bad("%d bytes is too short", st.Size())
	}
	var h [snapHeader]byte
	var t [snapTrailer]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return bad("header: %v", err)
	}
	if _, err := f.ReadAt(t[:], st.Size()-snapTrailer); err != nil {
		return bad("trailer: %v", err)
	}
	size := st.Size() - snapHeader - snapTrailer
	switch {
	case string(h[:8]) != snapMagic:
		return bad("bad magic %q", h[:8])
	case zab.Zxid(binary.LittleEndian.Uint64(h[8:])) != z:
		return bad("header zxid %#x", binary.LittleEndian.Uint64(h[8:]))
	case string(t[12:]) != snapEnd:
		return bad("bad end marker %q", t[12:])
	case int64(binary.LittleEndian.Uint64(t[:8])) != size:
		return bad("trailer says %d payload bytes, file has %d", binary.LittleEndian.Uint64(t[:8]), size)
	}
	return f, size, nil
}

type fileSnapReader struct {
	f    *os.File
	r    io.Reader
	crc  uint32
	want uint32
}

// Open implements SnapshotStore.
func (s *FileSnapshots) Open(z zab.Zxid) (io.ReadCloser, error) {
	f, size, err := s.openChecked(z)
	if err != nil {
		return nil, err
	}
	var h [snapHeader]byte
	var t [snapTrailer]byte
	f.ReadAt(h[:], 0) // both read fine in openChecked
	f.ReadAt(t[:], snapHeader+size)
	return &fileSnapReader{
		f: f, r: io.NewSectionReader(f, snapHeader, size),
		crc: crc32.Checksum(h[:], castagnoli), want: binary.LittleEndian.Uint32(t[8:12]),
	}, nil
}

func (r *fileSnapReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.crc = crc32.Update(r.crc, castagnoli, p[:n])
	if err == io.EOF && r.crc != r.want {
		return n, fmt.Errorf("storage: snapshot %s: %w: checksum %08x, computed %08x", r.f.Name(), ErrCorrupt, r.want, r.crc)
	}
	return n, err
}

func (r *fileSnapReader) Close() error { return r.f.Close() }

// DeleteAbove implements SnapshotStore.
func (s *FileSnapshots) DeleteAbove(z zab.Zxid) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	metas, err := s.list()
	if err != nil {
		return err
	}
	for _, m := range metas {
		if m.Zxid > z {
			if err := os.Remove(s.path(m.Zxid)); err != nil {
				return fmt.Errorf("storage: delete snapshot: %w", err)
			}
		}
	}
	if s.opts.Fsync {
		return syncDir(s.dir)
	}
	return nil
}

// MemSnapshots is a SnapshotStore in memory. The stores of one process share the bytes
// of equal snapshots (sharedSnaps): the simulator's servers all snapshot the same
// preloaded tree.
type MemSnapshots struct {
	mu     sync.Mutex
	keep   int
	snaps  map[zab.Zxid][]byte
	shared map[zab.Zxid]sharedKey // snapshots whose bytes are in sharedSnaps
	// parts are the snapshots kept as the pieces they were written in (WriteOwned);
	// their snaps entry is nil.
	parts map[zab.Zxid][][]byte
	open  map[zab.Zxid]int // readers not closed yet, per snapshot
	// spare is a dropped snapshot's buffer that no reader holds: the next Create
	// writes into it rather than into fresh memory, which a large tree's compactions
	// otherwise spend most of their time faulting in and clearing.
	spare []byte
}

var _ SnapshotStore = (*MemSnapshots)(nil)

// NewMemSnapshots returns an empty store retaining keep snapshots (default 3).
func NewMemSnapshots(keep int) *MemSnapshots {
	if keep <= 0 {
		keep = 3
	}
	return &MemSnapshots{keep: keep, snaps: map[zab.Zxid][]byte{}, shared: map[zab.Zxid]sharedKey{}, parts: map[zab.Zxid][][]byte{}, open: map[zab.Zxid]int{}}
}

// sharedSnaps holds, weakly, the bytes of snapshots the MemSnapshots of this process
// made, by zxid and the size their writer announced (Grow): a sink writing the same
// bytes as one of them keeps no copy of its own, so five servers that preloaded
// 250 MB hold one snapshot of it, not five. holders counts the stores and the sinks
// that may still read the bytes: only the last to let go may reuse them
// (MemSnapshots.spare); a store abandoned without dropping leaves the count high,
// which only forgoes that reuse.
var sharedSnaps struct {
	sync.Mutex
	m map[sharedKey]*sharedSnap
}

type sharedKey struct {
	zxid zab.Zxid
	size int
}

type sharedSnap struct {
	b       weak.Pointer[byte]
	n       int // len of the bytes
	holders int
}

// lookupShared is the live shared snapshot for k and its bytes, if any. Call with
// sharedSnaps locked.
func lookupShared(k sharedKey) (*sharedSnap, []byte) {
	e := sharedSnaps.m[k]
	if e == nil {
		return nil, nil
	}
	p := e.b.Value()
	if p == nil {
		delete(sharedSnaps.m, k)
		return nil, nil
	}
	return e, unsafe.Slice(p, e.n)
}

// release is a holder of k's shared bytes b letting go; it reports whether it was the
// last. Call with sharedSnaps locked.
func releaseShared(k sharedKey, b []byte) bool {
	e, same := lookupShared(k)
	if e == nil || &same[0] != &b[0] {
		return false // not counted: others may hold these bytes still
	}
	if e.holders--; e.holders > 0 {
		return false
	}
	delete(sharedSnaps.m, k)
	return true
}

type memSink struct {
	m    *MemSnapshots
	zxid zab.Zxid
	buf  bytes.Buffer
	done bool
	// While what is written equals same[:off] (shared bytes this sink holds), nothing
	// is copied; the first difference copies same[:off] into buf and goes on there.
	key  sharedKey // set by Grow
	same []byte
	off  int
	grow int // Grow's hint, for when the bytes part from same
	// parts are what WriteOwned handed over, kept as they are.
	parts [][]byte
}

// Create implements SnapshotStore.
func (m *MemSnapshots) Create(zxid zab.Zxid) (SnapshotSink, error) {
	return &memSink{m: m, zxid: zxid}, nil
}

// Grow makes room for n bytes (SaveView passes the tree's size): none while the bytes
// may be those of a shared snapshot of that size, then in the spare buffer if it is
// large enough, else in one allocation rather than by doubling.
func (k *memSink) Grow(n int) {
	if k.buf.Len() > 0 {
		k.buf.Grow(n)
		return
	}
	if k.key == (sharedKey{}) && k.off == 0 && k.same == nil && n > 0 {
		k.key = sharedKey{k.zxid, n}
		sharedSnaps.Lock()
		if e, same := lookupShared(k.key); e != nil {
			e.holders++
			k.same, k.grow = same, n
		}
		sharedSnaps.Unlock()
		if k.same != nil {
			return
		}
	}
	k.alloc(n)
}

// alloc gives buf room for n bytes.
func (k *memSink) alloc(n int) {
	k.m.mu.Lock()
	b := k.m.spare
	if cap(b) >= n {
		k.m.spare = nil
	} else {
		// make, unlike bytes.Buffer's growth, does not clear memory fresh from the kernel.
		b = make([]byte, 0, n)
	}
	k.m.mu.Unlock()
	k.buf = *bytes.NewBuffer(b[:0])
}

func (k *memSink) Write(p []byte) (int, error) {
	if k.done {
		return 0, ErrClosed
	}
	if k.same != nil {
		if k.off+len(p) <= len(k.same) && bytes.Equal(k.same[k.off:k.off+len(p)], p) {
			k.off += len(p)
			return len(p), nil
		}
		k.alloc(max(k.grow, k.off+len(p)))
		k.buf.Write(k.same[:k.off])
		k.letGo()
	}
	return k.buf.Write(p)
}

// WriteOwned writes p and takes it: p must never change afterwards. A sink written
// only this way keeps the pieces, not a copy of them (a snapshot received from the
// leader is already in pieces that the loaded tree keeps too).
func (k *memSink) WriteOwned(p []byte) (int, error) {
	if k.done || k.buf.Cap() > 0 || k.same != nil {
		return k.Write(p)
	}
	k.parts = append(k.parts, p)
	return len(p), nil
}

// letGo releases the shared bytes the sink compared with.
func (k *memSink) letGo() {
	sharedSnaps.Lock()
	releaseShared(k.key, k.same)
	sharedSnaps.Unlock()
	k.same = nil
}

func (k *memSink) Cancel() error {
	if !k.done {
		k.done = true
		if k.same != nil {
			k.letGo()
		}
		k.m.mu.Lock()
		k.m.recycle(k.buf.Bytes())
		k.m.mu.Unlock()
	}
	return nil
}

func (k *memSink) Close() error {
	if k.done {
		return ErrClosed
	}
	k.done = true
	b, shared := k.buf.Bytes(), false
	switch {
	case k.same != nil && k.off == len(k.same):
		b, shared = k.same, true // every byte was the same: the sink's hold is the store's
	case k.same != nil: // a prefix of them
		b = slices.Clone(k.same[:k.off])
		k.letGo()
	case k.key != (sharedKey{}) && len(b) > 0:
		sharedSnaps.Lock()
		switch e, same := lookupShared(k.key); {
		case e == nil:
			if sharedSnaps.m == nil {
				sharedSnaps.m = map[sharedKey]*sharedSnap{}
			}
			sharedSnaps.m[k.key] = &sharedSnap{b: weak.Make(&b[0]), n: len(b), holders: 1}
			shared = true
		case bytes.Equal(same, b):
			// Written beside another sink of the same bytes (two runs booting at once):
			// this copy goes, the first one stays.
			e.holders++
			b, shared = same, true
		}
		sharedSnaps.Unlock()
	}
	k.same = nil
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	if k.m.open[k.zxid] == 0 { // replacing a snapshot of the same zxid
		k.m.unshare(k.zxid)
	}
	k.m.snaps[k.zxid] = b
	delete(k.m.shared, k.zxid)
	delete(k.m.parts, k.zxid)
	if shared {
		k.m.shared[k.zxid] = k.key
	}
	if len(k.parts) > 0 {
		k.m.snaps[k.zxid], k.m.parts[k.zxid] = nil, k.parts
		k.parts = nil
	}
	for _, m := range k.m.list()[min(k.m.keep, len(k.m.snaps)):] {
		k.m.drop(m.Zxid)
	}
	return nil
}

// drop deletes snapshot z, keeping its buffer as the spare if no reader holds it and
// no other store shares it. Shared bytes a reader of this store still reads stay
// counted as held, so that no other store reuses them.
func (m *MemSnapshots) drop(z zab.Zxid) {
	if m.open[z] == 0 && m.unshare(z) {
		m.recycle(m.snaps[z])
	}
	delete(m.snaps, z)
	delete(m.shared, z)
	delete(m.parts, z)
}

// unshare lets go of snapshot z's shared bytes (if they are) and reports whether no
// other store or sink holds them.
func (m *MemSnapshots) unshare(z zab.Zxid) bool {
	k, ok := m.shared[z]
	if !ok {
		return true
	}
	delete(m.shared, z)
	if len(m.snaps[z]) == 0 {
		return false
	}
	sharedSnaps.Lock()
	defer sharedSnaps.Unlock()
	return releaseShared(k, m.snaps[z])
}

// recycle keeps b as the spare if it is the largest buffer on hand.
func (m *MemSnapshots) recycle(b []byte) {
	if cap(b) > cap(m.spare) {
		m.spare = b[:0]
	}
}

func (m *MemSnapshots) list() []SnapshotMeta {
	out := make([]SnapshotMeta, 0, len(m.snaps))
	for z, b := range m.snaps {
		size := int64(len(b))
		for _, p := range m.parts[z] {
			size += int64(len(p))
		}
		out = append(out, SnapshotMeta{Zxid: z, Size: size})
	}
	slices.SortFunc(out, func(a, b SnapshotMeta) int { return cmp.Compare(b.Zxid, a.Zxid) })
	return out
}

// List implements SnapshotStore.
func (m *MemSnapshots) List() ([]SnapshotMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.list(), nil
}

// Open implements SnapshotStore.
func (m *MemSnapshots) Open(z zab.Zxid) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.snaps[z]
	if !ok {
		return nil, fmt.Errorf("storage: snapshot %v: %w", z, os.ErrNotExist)
	}
	m.open[z]++
	var r io.Reader = bytes.NewReader(b)
	if ps := m.parts[z]; len(ps) > 0 {
		rs := make([]io.Reader, len(ps))
		for i, p := range ps {
			rs[i] = bytes.NewReader(p)
		}
		r = io.MultiReader(rs...)
	}
	return &memReader{r: r, m: m, z: z}, nil
}

// memReader reads a snapshot and, closed, lets its buffer be reused once dropped.
type memReader struct {
	r io.Reader
	m *MemSnapshots
	z zab.Zxid
}

func (r *memReader) Read(p []byte) (int, error) {
	if r.m == nil {
		return 0, ErrClosed
	}
	return r.r.Read(p)
}

func (r *memReader) Close() error {
	if r.m == nil {
		return ErrClosed
	}
	r.m.mu.Lock()
	if r.m.open[r.z]--; r.m.open[r.z] == 0 {
		delete(r.m.open, r.z)
	}
	r.m.mu.Unlock()
	r.m, r.r = nil, nil
	return nil
}

// DeleteAbove implements SnapshotStore.
func (m *MemSnapshots) DeleteAbove(z zab.Zxid) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.snaps {
		if k > z {
			m.drop(k)
		}
	}
	return nil
}
