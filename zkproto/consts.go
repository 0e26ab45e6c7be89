package zkproto

import "fmt"

// Op is a request type (ZooDefs.OpCode).
type Op int32

// Operation codes, as ZooKeeper numbers them.
const (
	OpNotify          Op = 0
	OpCreate          Op = 1
	OpDelete          Op = 2
	OpExists          Op = 3
	OpGetData         Op = 4
	OpSetData         Op = 5
	OpGetACL          Op = 6
	OpSetACL          Op = 7
	OpGetChildren     Op = 8
	OpSync            Op = 9
	OpPing            Op = 11
	OpGetChildren2    Op = 12
	OpCheck           Op = 13
	OpMulti           Op = 14
	OpCreate2         Op = 15
	OpReconfig        Op = 16
	OpCheckWatches    Op = 17
	OpRemoveWatches   Op = 18
	OpCreateContainer Op = 19
	OpDeleteContainer Op = 20
	OpCreateTTL       Op = 21
	OpMultiRead       Op = 22
	OpAuth            Op = 100
	OpSetWatches      Op = 101
	OpSASL            Op = 102
	OpGetEphemerals   Op = 103
	OpGetAllChildren  Op = 104
	OpSetWatches2     Op = 105
	OpAddWatch        Op = 106
	OpWhoAmI          Op = 107
	OpCreateSession   Op = -10
	OpCloseSession    Op = -11
	OpError           Op = -1
)

var opNames = map[Op]string{
	OpNotify: "notify", OpCreate: "create", OpDelete: "delete", OpExists: "exists",
	OpGetData: "getData", OpSetData: "setData", OpGetACL: "getACL", OpSetACL: "setACL",
	OpGetChildren: "getChildren", OpSync: "sync", OpPing: "ping", OpGetChildren2: "getChildren2",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2", OpReconfig: "reconfig",
	OpCheckWatches: "checkWatches", OpRemoveWatches: "removeWatches",
	OpCreateContainer: "createContainer", OpDeleteContainer: "deleteContainer",
	OpCreateTTL: "createTTL", OpMultiRead: "multiRead", OpAuth: "auth", OpSetWatches: "setWatches",
	OpSASL: "sasl", OpGetEphemerals: "getEphemerals", OpGetAllChildren: "getAllChildrenNumber",
	OpSetWatches2: "setWatches2", OpAddWatch: "addWatch", OpWhoAmI: "whoAmI",
	OpCreateSession: "createSession", OpCloseSession: "closeSession", OpError: "error",
}

func (o Op) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return fmt.Sprintf("op(%d)", int32(o))
}

// Reserved xids.
const (
	XidWatchEvent int32 = -1 // server-initiated watch notification
	XidPing       int32 = -2
	XidAuth       int32 = -4 // the Java client's auth packets
	XidSetWatches int32 = -8 // the Java client's setWatches on reconnect
)

// Code is a ZooKeeper error code (KeeperException.Code).
type Code int32

// Error codes, as ZooKeeper numbers them.
const (
	CodeOK                      Code = 0
	CodeSystemError             Code = -1
	CodeRuntimeInconsistency    Code = -2
	CodeDataInconsistency       Code = -3
	CodeConnectionLoss          Code = -4
	CodeMarshallingError        Code = -5
	CodeUnimplemented           Code = -6
	CodeOperationTimeout        Code = -7
	CodeBadArguments            Code = -8
	CodeUnknownSession          Code = -12
	CodeAPIError                Code = -100
	CodeNoNode                  Code = -101
	CodeNoAuth                  Code = -102
	CodeBadVersion              Code = -103
	CodeNoChildrenForEphemerals Code = -108
	CodeNodeExists              Code = -110
	CodeNotEmpty                Code = -111
	CodeSessionExpired          Code = -112
	CodeInvalidCallback         Code = -113
	CodeInvalidACL              Code = -114
	CodeAuthFailed              Code = -115
	CodeClosing                 Code = -116
	CodeNothing                 Code = -117
	CodeSessionMoved            Code = -118
	CodeNotReadOnly             Code = -119
	CodeEphemeralOnLocalSession Code = -120
	CodeNoWatcher               Code = -121
	CodeRequestTimeout          Code = -122
	CodeReconfigDisabled        Code = -123
)

var codeNames = map[Code]string{
	CodeOK: "ok", CodeSystemError: "system error", CodeRuntimeInconsistency: "runtime inconsistency",
	CodeDataInconsistency: "data inconsistency", CodeConnectionLoss: "connection loss",
	CodeMarshallingError: "marshalling error", CodeUnimplemented: "unimplemented",
	CodeOperationTimeout: "operation timeout", CodeBadArguments: "bad arguments",
	CodeUnknownSession: "unknown session", CodeAPIError: "api error", CodeNoNode: "no node",
	CodeNoAuth: "not authenticated", CodeBadVersion: "bad version",
	CodeNoChildrenForEphemerals: "no children for ephemerals", CodeNodeExists: "node exists",
	CodeNotEmpty: "not empty", CodeSessionExpired: "session expired",
	CodeInvalidCallback: "invalid callback", CodeInvalidACL: "invalid ACL",
	CodeAuthFailed: "auth failed", CodeClosing: "closing", CodeNothing: "nothing",
	CodeSessionMoved: "session moved", CodeNotReadOnly: "not read-only",
	CodeEphemeralOnLocalSession: "ephemeral on local session", CodeNoWatcher: "no watcher",
	CodeRequestTimeout: "request timeout", CodeReconfigDisabled: "reconfig disabled",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code(%d)", int32(c))
}

// Error makes a non-OK code usable as an error.
func (c Code) Error() string { return "zookeeper: " + c.String() }

// EventType is the type of a watch notification.
type EventType int32

// Watch event types.
const (
	EventNone                EventType = -1
	EventNodeCreated         EventType = 1
	EventNodeDeleted         EventType = 2
	EventNodeDataChanged     EventType = 3
	EventNodeChildrenChanged EventType = 4
)

// StateSyncConnected is the keeper state every watch event carries.
const StateSyncConnected int32 = 3

// Create modes (the flags field of a create request, CreateMode.toFlag).
const (
	ModePersistent                  int32 = 0
	ModeEphemeral                   int32 = 1
	ModePersistentSequential        int32 = 2
	ModeEphemeralSequential         int32 = 3
	ModeContainer                   int32 = 4
	ModePersistentWithTTL           int32 = 5
	ModePersistentSequentialWithTTL int32 = 6
)

// Permission bits of an ACL.
const (
	PermRead   int32 = 1 << 0
	PermWrite  int32 = 1 << 1
	PermCreate int32 = 1 << 2
	PermDelete int32 = 1 << 3
	PermAdmin  int32 = 1 << 4
	PermAll    int32 = 0x1f
)
