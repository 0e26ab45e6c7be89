package datatree

import (
	"errors"
	"fmt"
)

// Code is a ZooKeeper error code (KeeperException.Code), sent to clients as is.
type Code int32

// The codes poled produces, plus the ones a client may see from the server layer.
const (
	Ok                      Code = 0
	SystemError             Code = -1
	RuntimeInconsistency    Code = -2
	DataInconsistency       Code = -3
	ConnectionLoss          Code = -4
	MarshallingError        Code = -5
	Unimplemented           Code = -6
	OperationTimeout        Code = -7
	BadArguments            Code = -8
	UnknownSession          Code = -12
	APIError                Code = -100
	NoNode                  Code = -101
	NoAuth                  Code = -102
	BadVersion              Code = -103
	NoChildrenForEphemerals Code = -108
	NodeExists              Code = -110
	NotEmpty                Code = -111
	SessionExpired          Code = -112
	InvalidCallback         Code = -113
	InvalidACL              Code = -114
	AuthFailed              Code = -115
	SessionMoved            Code = -118
	NotReadOnly             Code = -119
)

var codeNames = map[Code]string{
	Ok: "ok", SystemError: "system error", RuntimeInconsistency: "runtime inconsistency",
	DataInconsistency: "data inconsistency", ConnectionLoss: "connection loss",
	MarshallingError: "marshalling error", Unimplemented: "unimplemented",
	OperationTimeout: "operation timeout", BadArguments: "bad arguments",
	UnknownSession: "unknown session", APIError: "api error", NoNode: "node does not exist",
	NoAuth: "not authenticated", BadVersion: "bad version",
	NoChildrenForEphemerals: "ephemeral nodes may not have children",
	NodeExists:              "node already exists", NotEmpty: "node has children",
	SessionExpired: "session has expired", InvalidCallback: "invalid callback",
	InvalidACL: "invalid ACL", AuthFailed: "authentication failed",
	SessionMoved: "session moved", NotReadOnly: "not a read-only call",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("zk code %d", int32(c))
}

// Error makes a non-Ok Code usable as an error: errors.Is(err, datatree.NoNode) works.
func (c Code) Error() string { return "zk: " + c.String() }

// Err is nil for Ok and c otherwise.
func (c Code) Err() error {
	if c == Ok {
		return nil
	}
	return c
}

// CodeOf maps an error back to a Code: nil is Ok, a wrapped Code is itself,
// anything else is SystemError.
func CodeOf(err error) Code {
	if err == nil {
		return Ok
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	return SystemError
}

// OpType is the kind of a transaction or multi sub-operation. The values are
// ZooKeeper's opcodes (ZooDefs.OpCode) so the wire server can map them directly.
type OpType int8

const (
	OpNoop    OpType = 0 // does nothing; advances LastZxid (e.g. a new leader's first txn)
	OpCreate  OpType = 1
	OpDelete  OpType = 2
	OpSetData OpType = 5
	OpSetACL  OpType = 7
	OpCheck   OpType = 13
	OpMulti   OpType = 14
	// OpDeleteContainer is the reaper's delete of a due container or TTL node.
	OpDeleteContainer OpType = 20
	OpCreateSession   OpType = -10
	OpCloseSession    OpType = -11
	OpError           OpType = -1 // only in multi results: the op did not take effect
)

func (t OpType) String() string {
	switch t {
	case OpNoop:
		return "noop"
	case OpCreate:
		return "create"
	case OpDelete:
		return "delete"
	case OpSetData:
		return "setData"
	case OpSetACL:
		return "setACL"
	case OpCheck:
		return "check"
	case OpMulti:
		return "multi"
	case OpDeleteContainer:
		return "deleteContainer"
	case OpCreateSession:
		return "createSession"
	case OpCloseSession:
		return "closeSession"
	case OpError:
		return "error"
	}
	return fmt.Sprintf("op(%d)", int8(t))
}

// CreateMode is ZooKeeper's CreateMode flag value as sent in a create request.
type CreateMode int32

const (
	Persistent           CreateMode = 0
	Ephemeral            CreateMode = 1
	PersistentSequential CreateMode = 2
	EphemeralSequential  CreateMode = 3
	// Container is deleted once it has had children and has none left.
	Container CreateMode = 4
	// PersistentWithTTL and PersistentSequentialWithTTL are deleted once childless
	// and unchanged for their TTL (ZooKeeper's extended types).
	PersistentWithTTL           CreateMode = 5
	PersistentSequentialWithTTL CreateMode = 6
)

// IsEphemeral reports whether nodes of this mode die with their session.
func (m CreateMode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// IsSequential reports whether the server appends a %010d counter to the name.
func (m CreateMode) IsSequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialWithTTL
}

func (m CreateMode) valid() bool { return m >= Persistent && m <= PersistentSequentialWithTTL }

// EventType is ZooKeeper's Watcher.Event.EventType for node events.
type EventType int32

const (
	EventNodeCreated         EventType = 1
	EventNodeDeleted         EventType = 2
	EventNodeDataChanged     EventType = 3
	EventNodeChildrenChanged EventType = 4
)

func (e EventType) String() string {
	switch e {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	}
	return fmt.Sprintf("event(%d)", int32(e))
}

// Event is one watch trigger produced by a transaction. The server fires data
// watches (exists/getData) on NodeCreated, NodeDeleted and NodeDataChanged of
// Path, and child watches on NodeDeleted of Path and NodeChildrenChanged of Path.
type Event struct {
	Type EventType
	Path string
}

// Stat is ZooKeeper's Stat, field for field and in jute order.
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last setData (or the create)
	Ctime          int64 // ms since the epoch, leader time of the create
	Mtime          int64 // ms since the epoch, leader time of the last change
	Version        int32 // number of data changes
	Cversion       int32 // number of child changes (creates + deletes)
	Aversion       int32 // number of ACL changes
	EphemeralOwner int64 // owning session id, 0 for persistent nodes
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // zxid of the last child create or delete
}

// MaxDataSize is the largest znode payload, ZooKeeper's default jute.maxbuffer (0xfffff).
const MaxDataSize = 0xfffff
