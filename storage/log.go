// Package storage keeps a replica's durable state: a transaction log of
// zab.Txns and snapshots of the data tree, behind small interfaces with a file
// implementation and an in-memory one (for the simulator and fast tests), and
// Recover, which rebuilds the tree from them after a restart.
package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"

	"github.com/polebench/polebench/zab"
)

// Log is the transaction log: zab.Txns in strictly increasing zxid order.
// Implementations are safe for concurrent use.
type Log interface {
	// Append adds txns after the last entry. They are durable after Sync. An
	// implementation may keep the txns' data: the caller must not modify it.
	Append(txns ...zab.Txn) error
	// Sync makes every appended entry durable (fsync when configured).
	Sync() error
	// Entries yields, in order, every entry with Zxid > after that was
	// appended before the call. A read error is yielded once, last.
	Entries(after zab.Zxid) iter.Seq2[zab.Txn, error]
	// FirstZxid and LastZxid bound the entries; both are 0 when the log is empty.
	FirstZxid() zab.Zxid
	LastZxid() zab.Zxid
	// Truncate durably removes every entry with Zxid > after (Zab's TRUNC).
	Truncate(after zab.Zxid) error
	// Compact drops old entries, all <= upTo, in whole segments (after a snapshot at upTo).
	Compact(upTo zab.Zxid) error
	Close() error
}

// Errors callers may test with errors.Is.
var (
	ErrCorrupt    = errors.New("storage: corrupt")
	ErrOutOfOrder = errors.New("storage: zxid not above the last entry")
	ErrClosed     = errors.New("storage: closed")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Segment file: segMagic, then records
//
//	length:u32 lengthCRC:u32 crc:u32 zxid:u64 data
//
// length counts zxid+data, lengthCRC is CRC32C of the length bytes, crc is
// CRC32C of zxid and data. The separate length check tells a flipped length
// (corruption) from a record cut short by a crash (a torn tail).
const (
	segMagic     = "PLOGSEG1"
	recordHeader = 12
	// MaxRecordData bounds one txn's data: a request is at most jute.maxbuffer,
	// so this leaves ample room while keeping a corrupt length harmless.
	MaxRecordData = 16 << 20
)

func appendRecord(b []byte, t zab.Txn) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(8+len(t.Data)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
	b = append(b, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Zxid))
	b = append(b, t.Data...)
	binary.LittleEndian.PutUint32(b[start+8:], crc32.Checksum(b[start+recordHeader:], castagnoli))
	return b
}

// errTorn marks a record cut short by the end of the segment.
var errTorn = errors.New("record cut short by end of segment")

// segReader decodes the records of one segment of known size.
type segReader struct {
	r         *bufio.Reader
	off, size int64
	end       int64    // where the record being read ends; -1 if unknown or intact
	last      zab.Zxid // zxid of the previous record, to check the order
	trustTail bool     // LogOptions.TrustTail
}

// header checks the segment magic.
func (s *segReader) header() error {
	var m [len(segMagic)]byte
	if s.size < int64(len(m)) {
		return errTorn
	}
	if _, err := io.ReadFull(s.r, m[:]); err != nil {
		return err
	}
	s.off = int64(len(m))
	if string(m[:]) != segMagic {
		return fmt.Errorf("%w: bad segment magic %q", ErrCorrupt, m[:])
	}
	return nil
}

// next returns the next record, io.EOF at the clean end of the segment,
// errTorn if the last record is incomplete, or an ErrCorrupt error. On error
// s.off stays at the start of the bad record.
func (s *segReader) next() (zab.Txn, error) {
	if s.off == s.size {
		return zab.Txn{}, io.EOF
	}
	if s.size-s.off < recordHeader {
		return zab.Txn{}, errTorn
	}
	var h [recordHeader]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil {
		return zab.Txn{}, err
	}
	n := int64(binary.LittleEndian.Uint32(h[:4]))
	s.end = -1 // unknown until the length is trusted
	if crc32.Checksum(h[:4], castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return zab.Txn{}, fmt.Errorf("%w: record length checksum mismatch", ErrCorrupt)
	}
	if n < 8 || n > 8+MaxRecordData {
		return zab.Txn{}, fmt.Errorf("%w: record length %d", ErrCorrupt, n)
	}
	s.end = s.off + recordHeader + n
	if s.end > s.size {
		return zab.Txn{}, errTorn
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(s.r, p); err != nil {
		return zab.Txn{}, err
	}
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(h[8:]) && !(s.trustTail && s.end == s.size) {
		return zab.Txn{}, fmt.Errorf("%w: record checksum mismatch", ErrCorrupt)
	}
	t := zab.Txn{Zxid: zab.Zxid(binary.LittleEndian.Uint64(p)), Data: p[8:]}
	if t.Zxid <= s.last {
		s.end = -1 // intact, so not torn
		return zab.Txn{}, fmt.Errorf("%w: zxid %v after %v", ErrCorrupt, t.Zxid, s.last)
	}
	s.last = t.Zxid
	s.off += recordHeader + n
	return t, nil
}

// DecodeSegment parses a whole segment image; it is the log decoder that the
// fuzzer drives. It returns the complete records and the error that stopped
// it (nil at a clean end, errTorn-like or ErrCorrupt otherwise).
func DecodeSegment(b []byte) ([]zab.Txn, error) {
	s := &segReader{r: bufio.NewReader(bytes.NewReader(b)), size: int64(len(b))}
	if err := s.header(); err != nil {
		return nil, err
	}
	var out []zab.Txn
	for {
		t, err := s.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("offset %d: %w", s.off, err)
		}
		out = append(out, t)
	}
}
