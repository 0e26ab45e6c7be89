// Package zkproto is the ZooKeeper client wire protocol as a pure codec: jute
// primitives, the connect handshake, request and reply headers, every operation
// poled serves, multi, watch events, and the four-letter-word texts. Nothing here
// does I/O beyond reading and writing one frame; decoders return errors, never panic.
package zkproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrShort means a message ended before all of its fields were read.
var ErrShort = errors.New("zkproto: message too short")

// DefaultMaxFrame is ZooKeeper's default jute.maxbuffer (0xfffff): the largest frame
// a server accepts before it drops the connection.
const DefaultMaxFrame = 0xfffff

// Encoder appends jute-encoded values to a byte slice. Encoding cannot fail.
type Encoder struct{ b []byte }

// NewEncoder returns an encoder that appends to buf (which may be nil).
func NewEncoder(buf []byte) *Encoder { return &Encoder{b: buf} }

// Bytes is everything encoded so far.
func (e *Encoder) Bytes() []byte { return e.b }

// Int appends a 4-byte big-endian int.
func (e *Encoder) Int(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }

// Long appends an 8-byte big-endian long.
func (e *Encoder) Long(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }

// Bool appends one byte, 1 or 0.
func (e *Encoder) Bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// Buffer appends a length-prefixed byte string; nil is encoded as length -1 (null).
func (e *Encoder) Buffer(v []byte) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	e.b = append(e.b, v...)
}

// String appends a length-prefixed UTF-8 string (jute ustring).
func (e *Encoder) String(v string) {
	e.Int(int32(len(v)))
	e.b = append(e.b, v...)
}

// Strings appends a vector of strings; nil is encoded as length -1 (null).
func (e *Encoder) Strings(v []string) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Decoder reads jute values from a byte slice. The first error sticks: later reads
// return zero values, and Err reports what went wrong and at which offset.
type Decoder struct {
	b   []byte
	off int
	err error
}

// NewDecoder reads from b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining is the number of bytes not read yet.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// Offset is the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int, field string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || d.Remaining() < n {
		d.fail(fmt.Errorf("%w: %s needs %d bytes at offset %d, %d left", ErrShort, field, n, d.off, d.Remaining()))
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

// Int reads a 4-byte int.
func (d *Decoder) Int(field string) int32 {
	p := d.take(4, field)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

// Long reads an 8-byte long.
func (d *Decoder) Long(field string) int64 {
	p := d.take(8, field)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

// Bool reads one byte; any non-zero value is true, as in jute.
func (d *Decoder) Bool(field string) bool {
	p := d.take(1, field)
	return p != nil && p[0] != 0
}

// length reads a length prefix; -1 means null. Anything else negative, or longer
// than what is left, is an error: a malformed length must not make us allocate.
func (d *Decoder) length(field string, minElem int) (n int, null bool) {
	l := d.Int(field)
	if d.err != nil {
		return 0, true
	}
	if l == -1 {
		return 0, true
	}
	if l < 0 || int64(l)*int64(minElem) > int64(d.Remaining()) {
		d.fail(fmt.Errorf("zkproto: %s: bad length %d at offset %d (%d bytes left)", field, l, d.off-4, d.Remaining()))
		return 0, true
	}
	return int(l), false
}

// Buffer reads a length-prefixed byte string; null (-1) is returned as nil, an empty
// buffer as a non-nil empty slice. The result is a copy.
func (d *Decoder) Buffer(field string) []byte {
	n, null := d.length(field, 1)
	if null {
		return nil
	}
	p := d.take(n, field)
	if p == nil {
		return nil
	}
	return append(make([]byte, 0, n), p...)
}

// String reads a length-prefixed string; null reads as "".
func (d *Decoder) String(field string) string {
	n, null := d.length(field, 1)
	if null {
		return ""
	}
	return string(d.take(n, field))
}

// Strings reads a vector of strings; a null vector reads as nil.
func (d *Decoder) Strings(field string) []string {
	n, null := d.length(field, 4)
	if null {
		return nil
	}
	v := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		v = append(v, d.String(field))
	}
	return v
}

// ReadFrame reads one length-prefixed frame. A length below zero or above max is an
// error (ZooKeeper drops such a connection); so is a frame cut short.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	return ReadFrameBody(r, int32(binary.BigEndian.Uint32(h[:])), max)
}

// ReadFrameBody reads the body of a frame whose 4-byte length was already read.
func ReadFrameBody(r io.Reader, n int32, max int) ([]byte, error) {
	if n < 0 || int(n) > max {
		return nil, fmt.Errorf("zkproto: frame length %d outside [0, %d]", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("zkproto: frame of %d bytes: %w", n, err)
	}
	return b, nil
}

// AppendFrame appends body to dst with its 4-byte length prefix.
func AppendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}
