package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/zab"
)

// LogOptions configure a FileLog.
type LogOptions struct {
	Fsync       bool  // fsync on Sync, Truncate and segment roll; off trusts the page cache
	SegmentSize int64 // start a new segment file once the current one reaches this; default 64 MiB
	// TrackSynced keeps, in the file "synced" beside the segments, how much of the
	// log each completed Sync made durable: what a power loss would leave
	// (LoseUnsynced cuts the log back to it, as Jepsen's lazyfs does).
	TrackSynced bool
	// SyncDelay is added to every Sync (a slow disk); SetSyncDelay changes it.
	SyncDelay time.Duration
	// TrustTail, for the checkers' tests only, breaks the log on purpose: the last
	// record of a segment is read whatever its data checksum says, so a corrupted
	// tail is served rather than cut (replica.TrustTornTail). The checks must catch
	// the server that does it.
	TrustTail bool
}

// DefaultSegmentSize is the segment roll size when LogOptions leaves it 0.
const DefaultSegmentSize = 64 << 20

type segment struct {
	path  string
	first zab.Zxid // zxid of its first record, also its name
	size  int64    // bytes written to it, buffered ones included
}

// FileLog is the Log in a directory of segment files named by their first zxid
// (%016x.log). Opening it cuts a torn record off the tail of the last segment;
// corruption anywhere else is an error naming the file and offset.
type FileLog struct {
	mu     sync.Mutex
	dir    string
	opts   LogOptions
	logger *slog.Logger
	segs   []segment
	f      *os.File // the last segment, open for append; nil when none
	w      *bufio.Writer
	last   zab.Zxid
	buf    []byte
	err    error // sticky: after a failed write the log's tail is unknown
	closed bool
	delay  atomic.Int64 // ns added to every Sync
}

// SetSyncDelay makes every Sync take d longer (a slow disk; 0 restores it).
func (l *FileLog) SetSyncDelay(d time.Duration) { l.delay.Store(int64(d)) }

// SyncedFile names the file in a log's directory that says how much of it is durable
// (LogOptions.TrackSynced): the last segment's name and size.
const SyncedFile = "synced"

// noteSynced records that the last segment is durable up to its size.
func (l *FileLog) noteSynced() {
	if !l.opts.TrackSynced {
		return
	}
	name, size := "-", int64(0)
	if n := len(l.segs); n > 0 {
		name, size = filepath.Base(l.segs[n-1].path), l.segs[n-1].size
	}
	// Written after the sync it reports and before Sync returns: what anyone was told
	// is durable is at most what it says. A write cut short leaves it empty: unknown.
	os.WriteFile(filepath.Join(l.dir, SyncedFile), fmt.Appendf(nil, "%s %d\n", name, size), 0o644)
}

var _ Log = (*FileLog)(nil)

// OpenLog opens (creating if needed) the log in dir.
func OpenLog(dir string, opts LogOptions, logger *slog.Logger) (*FileLog, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: open log: %w", err)
	}
	l := &FileLog{dir: dir, opts: opts, logger: logger}
	l.delay.Store(int64(opts.SyncDelay))
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: open log: %w", err)
	}
	var segs []segment
	for _, e := range names {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || len(name) != 16 {
			continue
		}
		first, err := strconv.ParseUint(name, 16, 64)
		if err != nil {
			continue
		}
		segs = append(segs, segment{path: filepath.Join(dir, e.Name()), first: zab.Zxid(first)})
	}
	for i, s := range segs { // ReadDir sorts by name, and fixed-width hex sorts by zxid
		if err := l.load(s, i == len(segs)-1); err != nil {
			return nil, err
		}
	}
	if len(l.segs) > 0 {
		s := l.segs[len(l.segs)-1]
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, fmt.Errorf("storage: open log: %w", err)
		}
		l.f, l.w = f, bufio.NewWriterSize(f, 256<<10)
	}
	l.noteSynced() // what survived is all there is
	return l, nil
}

// load scans one segment, checks it, and cuts a torn tail if it is the last.
func (l *FileLog) load(s segment, isLast bool) error {
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("storage: open log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("storage: open log: %w", err)
	}
	r := &segReader{r: bufio.NewReaderSize(f, 1<<20), size: st.Size(), last: l.last, trustTail: l.opts.TrustTail}
	err = r.header()
	n := 0
	for err == nil {
		var t zab.Txn
		if t, err = r.next(); err == nil {
			if n == 0 && t.Zxid != s.first {
				return fmt.Errorf("storage: log segment %s: %w: first zxid %v", s.path, ErrCorrupt, t.Zxid)
			}
			n++
		}
	}
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		// Torn: cut short, or a bad checksum on the very last record, or only zeros left.
		torn := errors.Is(err, errTorn) || errors.Is(err, ErrCorrupt) && (r.end == r.size || zeroFrom(f, r.off))
		if !isLast || !torn {
			return fmt.Errorf("storage: log segment %s at offset %d: %w", s.path, r.off, err)
		}
		l.logger.Warn("cutting torn log tail", "file", s.path, "offset", r.off, "size", r.size, "reason", err)
		if n == 0 { // nothing durable in it: the next append starts a fresh segment
			if err := os.Remove(s.path); err != nil {
				return fmt.Errorf("storage: cut torn log tail: %w", err)
			}
			return syncDir(l.dir)
		}
		if err := f.Truncate(r.off); err != nil {
			return fmt.Errorf("storage: cut torn log tail of %s: %w", s.path, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("storage: cut torn log tail of %s: %w", s.path, err)
		}
	}
	if n == 0 && !isLast {
		return fmt.Errorf("storage: log segment %s: %w: no records", s.path, ErrCorrupt)
	}
	if n > 0 {
		s.size = r.off
		l.segs = append(l.segs, s)
		l.last = r.last
	} else if err := os.Remove(s.path); err != nil { // a header without records
		return fmt.Errorf("storage: open log: %w", err)
	}
	return nil
}

// zeroFrom reports whether f holds only zero bytes from off to its end: a
// file extended but never written, as a crash can leave it.
func zeroFrom(f *os.File, off int64) bool {
	r := bufio.NewReader(io.NewSectionReader(f, off, 1<<62))
	for {
		c, err := r.ReadByte()
		if err != nil {
			return err == io.EOF
		}
		if c != 0 {
			return false
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (l *FileLog) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.err
}

// Append implements Log.
func (l *FileLog) Append(txns ...zab.Txn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	prev := l.last
	for _, t := range txns {
		if t.Zxid <= prev {
			return fmt.Errorf("%w: %v after %v", ErrOutOfOrder, t.Zxid, prev)
		}
		if len(t.Data) > MaxRecordData {
			return fmt.Errorf("storage: txn %v: %d bytes exceed %d", t.Zxid, len(t.Data), MaxRecordData)
		}
		prev = t.Zxid
	}
	for _, t := range txns {
		if l.f == nil || l.segs[len(l.segs)-1].size >= l.opts.SegmentSize {
			if err := l.roll(t.Zxid); err != nil {
				l.err = fmt.Errorf("storage: log roll: %w", err)
				return l.err
			}
		}
		l.buf = appendRecord(l.buf[:0], t)
		if _, err := l.w.Write(l.buf); err != nil {
			l.err = fmt.Errorf("storage: log append: %w", err)
			return l.err
		}
		l.segs[len(l.segs)-1].size += int64(len(l.buf))
		l.last = t.Zxid
	}
	return nil
}

// roll closes the current segment and starts one named first.
func (l *FileLog) roll(first zab.Zxid) error {
	if err := l.closeActive(); err != nil {
		return err
	}
	path := filepath.Join(l.dir, fmt.Sprintf("%016x.log", uint64(first)))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	l.f, l.w = f, bufio.NewWriterSize(f, 256<<10)
	l.w.WriteString(segMagic)
	l.segs = append(l.segs, segment{path: path, first: first, size: int64(len(segMagic))})
	if l.opts.TrackSynced { // the new segment holds nothing durable yet
		os.WriteFile(filepath.Join(l.dir, SyncedFile), fmt.Appendf(nil, "%s 0\n", filepath.Base(path)), 0o644)
	}
	if l.opts.Fsync {
		return syncDir(l.dir)
	}
	return nil
}

func (l *FileLog) closeActive() error {
	if l.f == nil {
		return nil
	}
	err := l.flush(true)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f, l.w = nil, nil
	return err
}

func (l *FileLog) flush(sync bool) error {
	if l.w == nil {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return err
	}
	if sync && l.opts.Fsync {
		return l.f.Sync()
	}
	return nil
}

// Sync implements Log.
func (l *FileLog) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if d := time.Duration(l.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	if err := l.flush(true); err != nil {
		l.err = fmt.Errorf("storage: log sync: %w", err)
		return l.err
	}
	if l.opts.Fsync {
		l.noteSynced()
	}
	return nil
}

// FirstZxid implements Log.
func (l *FileLog) FirstZxid() zab.Zxid {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segs) == 0 {
		return 0
	}
	return l.segs[0].first
}

// LastZxid implements Log.
func (l *FileLog) LastZxid() zab.Zxid {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Entries implements Log. It reads the files without holding the lock, up to
// the sizes they had when called.
func (l *FileLog) Entries(after zab.Zxid) iter.Seq2[zab.Txn, error] {
	l.mu.Lock()
	err := l.usable()
	if err == nil {
		if err = l.flush(false); err != nil {
			l.err = fmt.Errorf("storage: log flush: %w", err)
		}
	}
	segs := append([]segment(nil), l.segs...)
	l.mu.Unlock()
	return func(yield func(zab.Txn, error) bool) {
		if err != nil {
			yield(zab.Txn{}, err)
			return
		}
		for i, s := range segs {
			if i+1 < len(segs) && segs[i+1].first-1 <= after {
				continue // every entry of s is below the next segment's first
			}
			if !readSegment(s, after, l.opts.TrustTail, yield) {
				return
			}
		}
	}
}

// readSegment yields the entries of s above after; false means stop.
func readSegment(s segment, after zab.Zxid, trustTail bool, yield func(zab.Txn, error) bool) bool {
	f, err := os.Open(s.path)
	if err != nil {
		yield(zab.Txn{}, fmt.Errorf("storage: read log: %w", err))
		return false
	}
	defer f.Close()
	r := &segReader{r: bufio.NewReaderSize(f, 256<<10), size: s.size, trustTail: trustTail}
	if err := r.header(); err != nil {
		yield(zab.Txn{}, fmt.Errorf("storage: read log %s: %w", s.path, err))
		return false
	}
	for {
		t, err := r.next()
		if err == io.EOF {
			return true
		}
		if err != nil {
			yield(zab.Txn{}, fmt.Errorf("storage: read log %s at offset %d: %w", s.path, r.off, err))
			return false
		}
		if t.Zxid > after && !yield(t, nil) {
			return false
		}
	}
}

// Truncate implements Log.
func (l *FileLog) Truncate(after zab.Zxid) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if after >= l.last {
		return nil
	}
	if err := l.truncate(after); err != nil {
		l.err = fmt.Errorf("storage: log truncate: %w", err)
		return l.err
	}
	if l.opts.Fsync {
		l.noteSynced()
	}
	return nil
}

func (l *FileLog) truncate(after zab.Zxid) error {
	if err := l.closeActive(); err != nil {
		return err
	}
	removed := false
	for len(l.segs) > 0 && l.segs[len(l.segs)-1].first > after {
		if err := os.Remove(l.segs[len(l.segs)-1].path); err != nil {
			return err
		}
		l.segs, removed = l.segs[:len(l.segs)-1], true
	}
	l.last = 0
	if len(l.segs) > 0 {
		s := &l.segs[len(l.segs)-1]
		f, err := os.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		// Find the end of the last record <= after.
		r := &segReader{r: bufio.NewReaderSize(f, 1<<20), size: s.size}
		if err := r.header(); err != nil {
			return fmt.Errorf("%s: %w", s.path, err)
		}
		end := r.off
		for {
			t, err := r.next()
			if err == io.EOF || (err == nil && t.Zxid > after) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s at offset %d: %w", s.path, r.off, err)
			}
			end, l.last = r.off, t.Zxid
		}
		if err := f.Truncate(end); err != nil {
			return err
		}
		if l.opts.Fsync {
			if err := f.Sync(); err != nil {
				return err
			}
		}
		s.size = end
		if l.f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
			return err
		}
		l.w = bufio.NewWriterSize(l.f, 256<<10)
	}
	if removed && l.opts.Fsync {
		return syncDir(l.dir)
	}
	return nil
}

// Compact implements Log. The segment being written is never removed.
func (l *FileLog) Compact(upTo zab.Zxid) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	removed := false
	for len(l.segs) > 1 && l.segs[1].first-1 <= upTo {
		if err := os.Remove(l.segs[0].path); err != nil {
			return fmt.Errorf("storage: log compact: %w", err)
		}
		l.segs, removed = l.segs[1:], true
	}
	if removed && l.opts.Fsync {
		return syncDir(l.dir)
	}
	return nil
}

// Close flushes (and fsyncs when configured) and closes the log.
func (l *FileLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.err != nil {
		if l.f != nil {
			l.f.Close()
		}
		return l.err
	}
	return l.closeActive()
}
