package datatree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Op is one state operation. Which fields matter depends on Type:
// create uses Path, Data, Mode, ACL; delete and check use Path, Version; setData
// uses Path, Data, Version; setACL uses Path, ACL, Version (of the ACL);
// createSession uses Timeout; multi uses Ops (whose elements are create, delete,
// setData or check).
type Op struct {
	Type    OpType
	Path    string
	Data    []byte
	Mode    CreateMode
	Version int32 // expected version, -1 for any
	Timeout int32 // session timeout in ms (createSession)
	ACL     []ACL // as the client sent it (create, setACL); nil is the open ACL
	TTL     int64 // ms, a TTL node's create (its mode says so); 0 otherwise
	Ops     []Op
}

// Txn is one replicated state update: an Op plus who asked and when. The
// leader fixes Time so that applying the txn is deterministic on every replica;
// the zxid comes from the broadcast (zab.Txn.Zxid) and is passed to Apply.
type Txn struct {
	Session int64 // client session id; 0 means the server itself
	Time    int64 // ms since the Unix epoch, chosen by the leader
	// Auth is who the requester is (its connection's identities: its ip, the digests
	// it added): ACLs are checked where the txn applies, the same on every replica.
	// Session 0 (the server) passes every ACL.
	Auth []ID
	Op
}

// Create is a create op with the open ACL (path gets a %010d suffix when mode is
// sequential).
func Create(path string, data []byte, mode CreateMode) Op {
	return Op{Type: OpCreate, Path: path, Data: data, Mode: mode}
}

// CreateACL is a create op with an ACL (checked and fixed up as ZooKeeper does).
func CreateACL(path string, data []byte, mode CreateMode, acl []ACL) Op {
	return Op{Type: OpCreate, Path: path, Data: data, Mode: mode, ACL: stored(acl)}
}

// SetACL replaces a node's ACL; version is the expected ACL version (-1 any).
func SetACL(path string, acl []ACL, version int32) Op {
	return Op{Type: OpSetACL, Path: path, ACL: acl, Version: version}
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

// Encoding, version 2 (all integers little endian or varint):
//
//	txn  = version:u8(2) session:u64 time:varint auth op
//	auth = count:uvarint { scheme id }
//	op   = type:i8 body
//	body = create: path mode:u8 data acl [ttl:varint, TTL modes only] |
//	       delete, check: path version:varint | deleteContainer: path |
//	       setData: path version:varint data | setACL: path version:varint acl |
//	       createSession: timeout:varint |
//	       multi: count:uvarint op* (no nested multi) | closeSession, noop: empty
//	acl  = count:uvarint { perms:varint scheme id }   (count 0: the open ACL)
//	data = 0:uvarint (null) | len+1:uvarint bytes     (null and empty differ, as in ZooKeeper)
//	path, scheme, id = len:uvarint bytes
//
// Version 1, what logs written before ACLs hold, is version 2 without auth and acl,
// and data as len:uvarint bytes (empty read as null).
const txnVersion = 2

// ErrTxnCorrupt wraps every Unmarshal failure.
var ErrTxnCorrupt = errors.New("datatree: corrupt txn")

// Marshal encodes t compactly; it can travel as zab.Txn.Data.
func (t Txn) Marshal() []byte {
	n := 24 + len(t.Path) + len(t.Data)
	for _, id := range t.Auth {
		n += 4 + len(id.Scheme) + len(id.ID)
	}
	b := make([]byte, 0, n)
	b = append(b, txnVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Session))
	b = binary.AppendVarint(b, t.Time)
	b = binary.AppendUvarint(b, uint64(len(t.Auth)))
	for _, id := range t.Auth {
		b = appendID(b, id)
	}
	return appendOp(b, &t.Op)
}

// appendData appends a node's data, null (nil) apart from empty.
func appendData(b, p []byte) []byte {
	if p == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(p))+1)
	return append(b, p...)
}

func appendID(b []byte, id ID) []byte {
	b = appendBytes(b, []byte(id.Scheme))
	return appendBytes(b, []byte(id.ID))
}

func appendACL(b []byte, acl []ACL) []byte {
	acl = stored(acl)
	b = binary.AppendUvarint(b, uint64(len(acl)))
	for _, a := range acl {
		b = binary.AppendVarint(b, int64(a.Perms))
		b = appendID(b, a.ID)
	}
	return b
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
		b = appendData(b, op.Data)
		b = appendACL(b, op.ACL)
		if op.Mode.IsTTL() {
			b = binary.AppendVarint(b, op.TTL)
		}
	case OpDeleteContainer:
		b = appendBytes(b, []byte(op.Path))
	case OpSetACL:
		b = appendBytes(b, []byte(op.Path))
		b = binary.AppendVarint(b, int64(op.Version))
		b = appendACL(b, op.ACL)
	case OpDelete, OpCheck:
		b = appendBytes(b, []byte(op.Path))
		b = binary.AppendVarint(b, int64(op.Version))
	case OpSetData:
		b = appendBytes(b, []byte(op.Path))
		b = binary.AppendVarint(b, int64(op.Version))
		b = appendData(b, op.Data)
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
	v := d.byte("version")
	if d.err == nil && v != txnVersion && v != 1 {
		return fmt.Errorf("%w: unknown version %d", ErrTxnCorrupt, v)
	}
	d.v1 = v == 1
	var n Txn
	n.Session = int64(d.u64("session"))
	n.Time = d.varint("time")
	if !d.v1 {
		n.Auth = d.ids()
	}
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
	v1     bool // a version 1 txn: no auth, no ACLs
}

// data decodes a node's data: nil for null, empty apart from it (version 2).
func (d *decoder) data() []byte {
	if d.v1 {
		return d.bytes("data")
	}
	n := d.uvarintOf("data", " length")
	switch {
	case d.err != nil || n == 0:
		return nil
	case n-1 > uint64(len(d.b)):
		d.fail("data", fmt.Errorf("length %d exceeds the %d bytes left", n-1, len(d.b)))
		return nil
	case n == 1:
		return []byte{}
	}
	p := d.take(int(n-1), "data")
	if d.shared {
		return p[:len(p):len(p)]
	}
	return append([]byte(nil), p...)
}

// str decodes a short string (a scheme, an id); shared, it aliases the buffer as
// path does (every write carries its requester's ip).
func (d *decoder) str(field string) string {
	p := d.bytes(field)
	if d.shared && len(p) > 0 {
		return unsafe.String(&p[0], len(p))
	}
	return string(p)
}

// ids decodes a count and that many identities.
func (d *decoder) ids() []ID {
	n := d.uvarint("auth count")
	if d.err == nil && n > uint64(len(d.b))/2 { // every id takes at least 2 bytes
		d.fail("auth count", fmt.Errorf("%d ids cannot fit in %d bytes", n, len(d.b)))
	}
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]ID, n)
	for i := range out {
		out[i] = ID{d.str("scheme"), d.str("id")}
	}
	return out
}

// acl decodes an ACL; count 0 is the open ACL (nil).
func (d *decoder) acl() []ACL {
	if d.v1 {
		return nil
	}
	n := d.uvarint("acl count")
	if d.err == nil && n > uint64(len(d.b))/3 { // every entry takes at least 3 bytes
		d.fail("acl count", fmt.Errorf("%d entries cannot fit in %d bytes", n, len(d.b)))
	}
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]ACL, n)
	for i := range out {
		out[i].Perms = d.int32("perms")
		out[i].ID = ID{d.str("scheme"), d.str("id")}
	}
	return out
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
		op.Data = d.data()
		op.ACL = d.acl()
		if op.Mode.IsTTL() && !d.v1 {
			op.TTL = d.varint("ttl")
		}
	case OpDeleteContainer:
		op.Path = d.path()
	case OpSetACL:
		op.Path = d.path()
		op.Version = d.int32("version")
		op.ACL = d.acl()
	case OpDelete, OpCheck:
		op.Path = d.path()
		op.Version = d.int32("version")
	case OpSetData:
		op.Path = d.path()
		op.Version = d.int32("version")
		op.Data = d.data()
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
