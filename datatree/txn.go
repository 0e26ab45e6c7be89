package datatree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Op is one state operation. Which fields matter depends on Type:
// create uses Path, Data, Mode; delete and check use Path, Version; setData
// uses Path, Data, Version; createSession uses Timeout; multi uses Ops (whose
// elements are create, delete, setData or check).
type Op struct {
	Type    OpType
	Path    string
	Data    []byte
	Mode    CreateMode
	Version int32 // expected version, -1 for any
	Timeout int32 // session timeout in ms (createSession)
	Ops     []Op
}

// Txn is one replicated state update: an Op plus who asked and when. The
// leader fixes Time so that applying the txn is deterministic on every replica;
// the zxid comes from the broadcast (zab.Txn.Zxid) and is passed to Apply.
type Txn struct {
	Session int64 // client session id; 0 means the server itself
	Time    int64 // ms since the Unix epoch, chosen by the leader
	Op
}

// Create is a create op (path gets a %010d suffix when mode is sequential).
func Create(path string, data []byte, mode CreateMode) Op {
	return Op{Type: OpCreate, Path: path, Data: data, Mode: mode}
}

// Delete is a delete op; version -1 matches any version.
func Delete(path string, version int32) Op { return Op{Type: OpDelete, Path: path, Version: version} }

// SetData is a setData op; version -1 matches any version.
func SetData(path string, data []byte, version int32) Op {
	return Op{Type: OpSetData, Path: path, Data: data, Version: version}
}

// Check is a version check op (only meaningful inside a multi).
func Check(path string, version int32) Op { return Op{Type: OpCheck, Path: path, Version: version} }

// Multi is an all-or-nothing group of create, delete, setData and check ops.
func Multi(ops ...Op) Op { return Op{Type: OpMulti, Ops: ops} }

// CreateSession registers a session with its negotiated timeout (ms); the id is Txn.Session.
func CreateSession(timeout int32) Op { return Op{Type: OpCreateSession, Timeout: timeout} }

// CloseSession ends Txn.Session and deletes its ephemerals; session expiry is the same txn.
func CloseSession() Op { return Op{Type: OpCloseSession} }

// Noop changes nothing but LastZxid.
func Noop() Op { return Op{Type: OpNoop} }

// Encoding, version 1 (all integers little endian or varint):
//
//	txn  = version:u8(1) session:u64 time:varint op
//	op   = type:i8 body
//	body = create: path mode:u8 data | delete, check: path version:varint |
//	       setData: path version:varint data | createSession: timeout:varint |
//	       multi: count:uvarint op* (no nested multi) | closeSession, noop: empty
//	path, data = len:uvarint bytes
const txnVersion = 1

// ErrTxnCorrupt wraps every Unmarshal failure.
var ErrTxnCorrupt = errors.New("datatree: corrupt txn")

// Marshal encodes t compactly; it can travel as zab.Txn.Data.
func (t Txn) Marshal() []byte {
	b := make([]byte, 0, 24+len(t.Path)+len(t.Data))
	b = append(b, txnVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Session))
	b = binary.AppendVarint(b, t.Time)
	return appendOp(b, &t.Op)
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendOp(b []byte, op *Op) []byte {
	b = append(b, byte(op.Type))
	switch op.Type {
	case OpCreate:
		b = appendBytes(b, []byte(op.Path))
		b = append(b, byte(op.Mode))
		b = appendBytes(b, op.Data)
	case OpDelete, OpCheck:
		b = appendBytes(b, []byte(op.Path))
		b = binary.AppendVarint(b, int64(op.Version))
	case OpSetData:
		b = appendBytes(b, []byte(op.Path))
		b = binary.AppendVarint(b, int64(op.Version))
		b = appendBytes(b, op.Data)
	case OpCreateSession:
		b = binary.AppendVarint(b, int64(op.Timeout))
	case OpMulti:
		b = binary.AppendUvarint(b, uint64(len(op.Ops)))
		for i := range op.Ops {
			b = appendOp(b, &op.Ops[i])
		}
	}
	return b
}

// Unmarshal decodes what Marshal produced. Any malformed input gives an error
// wrapping ErrTxnCorrupt (never a panic, never a huge allocation). Paths are
// not validated here: Apply does that, deterministically, as BadArguments.
func (t *Txn) Unmarshal(b []byte) error { return t.unmarshal(b, false) }

// UnmarshalShared is Unmarshal without copies: the byte and path fields of t alias b, which
// must never change afterwards. Committed transactions are such buffers (zab and
// storage allocate each one and never write to it again), and a replica applies
// every one of them: a copy per transaction per replica is what this saves.
func (t *Txn) UnmarshalShared(b []byte) error { return t.unmarshal(b, true) }

func (t *Txn) unmarshal(b []byte, shared bool) error {
	d := decoder{b: b, shared: shared}
	if v := d.byte("version"); d.err == nil && v != txnVersion {
		return fmt.Errorf("%w: unknown version %d", ErrTxnCorrupt, v)
	}
	var n Txn
	n.Session = int64(d.u64("session"))
	n.Time = d.varint("time")
	d.op(&n.Op, true)
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes", fmt.Errorf("%d left", len(d.b)))
	}
	if d.err != nil {
		return d.err
	}
	*t = n
	return nil
}

// UnmarshalTxn is Unmarshal as a function.
func UnmarshalTxn(b []byte) (Txn, error) {
	var t Txn
	err := t.Unmarshal(b)
	return t, err
}

type decoder struct {
	b      []byte
	off    int // bytes consumed, for messages
	err    error
	shared bool // byte fields alias b instead of copying it
}

func (d *decoder) fail(field string, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d: %v", ErrTxnCorrupt, field, d.off, err)
	}
}

func (d *decoder) take(n int, field string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail(field, fmt.Errorf("need %d bytes, have %d", n, len(d.b)))
		return nil
	}
	p := d.b[:n]
	d.b, d.off = d.b[n:], d.off+n
	return p
}

func (d *decoder) byte(field string) byte {
	if p := d.take(1, field); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u64(field string) uint64 {
	if p := d.take(8, field); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(field, errors.New("bad varint"))
		return 0
	}
	d.b, d.off = d.b[n:], d.off+n
	return v
}

func (d *decoder) int32(field string) int32 {
	v := d.varint(field)
	if v != int64(int32(v)) {
		d.fail(field, fmt.Errorf("%d overflows int32", v))
	}
	return int32(v)
}

func (d *decoder) uvarint(field string) uint64 { return d.uvarintOf(field, "") }

// uvarintOf reads a uvarint; an error names field+suffix (joined only then: decoding
// is hot, and concatenation allocates).
func (d *decoder) uvarintOf(field, suffix string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(field+suffix, errors.New("bad uvarint"))
		return 0
	}
	d.b, d.off = d.b[n:], d.off+n
	return v
}

func (d *decoder) bytes(field string) []byte {
	n := d.uvarintOf(field, " length")
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail(field, fmt.Errorf("length %d exceeds the %d bytes left", n, len(d.b)))
	}
	p := d.take(int(n), field)
	if len(p) == 0 {
		return nil
	}
	if d.shared {
		return p[:len(p):len(p)]
	}
	return append([]byte(nil), p...) // the tree keeps it; do not alias the caller's buffer
}

// path decodes a path; shared, it aliases the buffer as the byte fields do (a
// string per transaction per replica was the decoding's main allocation).
func (d *decoder) path() string {
	p := d.bytes("path")
	if d.shared && len(p) > 0 {
		return unsafe.String(&p[0], len(p))
	}
	return string(p)
}

func (d *decoder) op(op *Op, top bool) {
	op.Type = OpType(d.byte("op type"))
	if d.err != nil {
		return
	}
	switch op.Type {
	case OpCreate:
		op.Path = d.path()
		op.Mode = CreateMode(d.byte("mode"))
		if d.err == nil && !op.Mode.valid() {
			d.fail("mode", fmt.Errorf("unknown create mode %d", op.Mode))
		}
		op.Data = d.bytes("data")
	case OpDelete, OpCheck:
		op.Path = d.path()
		op.Version = d.int32("version")
	case OpSetData:
		op.Path = d.path()
		op.Version = d.int32("version")
		op.Data = d.bytes("data")
	case OpCreateSession, OpCloseSession, OpNoop, OpMulti:
		if !top {
			d.fail("op type", fmt.Errorf("%v not allowed inside multi", op.Type))
			return
		}
		switch op.Type {
		case OpCreateSession:
			op.Timeout = d.int32("timeout")
		case OpMulti:
			n := d.uvarint("multi count")
			if d.err == nil && n > uint64(len(d.b))/2 { // every op takes at least 2 bytes
				d.fail("multi count", fmt.Errorf("%d ops cannot fit in %d bytes", n, len(d.b)))
			}
			if d.err != nil {
				return
			}
			if n > 0 {
				op.Ops = make([]Op, n)
			}
			for i := range op.Ops {
				d.op(&op.Ops[i], false)
			}
		}
	default:
		d.fail("op type", fmt.Errorf("unknown op type %d", int8(op.Type)))
	}
}
