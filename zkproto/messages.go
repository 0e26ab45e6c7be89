package zkproto

import "fmt"

// Message is any jute record: it writes itself to an Encoder and reads itself from a
// Decoder (errors stick in the Decoder).
type Message interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Marshal encodes m into a fresh byte slice.
func Marshal(m Message) []byte {
	e := NewEncoder(nil)
	m.Encode(e)
	return e.Bytes()
}

// Unmarshal decodes b into m; trailing bytes are an error.
func Unmarshal(b []byte, m Message) error {
	d := NewDecoder(b)
	m.Decode(d)
	if err := d.Err(); err != nil {
		return err
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("zkproto: %T: %d trailing bytes", m, d.Remaining())
	}
	return nil
}

// ACL is one access control entry (perms on scheme:id).
type ACL struct {
	Perms  int32
	Scheme string
	ID     string
}

// OpenACL is world:anyone with every permission (ZooDefs.Ids.OPEN_ACL_UNSAFE).
var OpenACL = []ACL{{Perms: PermAll, Scheme: "world", ID: "anyone"}}

func (a *ACL) Encode(e *Encoder) { e.Int(a.Perms); e.String(a.Scheme); e.String(a.ID) }
func (a *ACL) Decode(d *Decoder) {
	a.Perms = d.Int("acl.perms")
	a.Scheme = d.String("acl.scheme")
	a.ID = d.String("acl.id")
}

func encodeACLs(e *Encoder, v []ACL) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

func decodeACLs(d *Decoder) []ACL {
	n, null := d.length("acl", 12)
	if null {
		return nil
	}
	v := make([]ACL, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		v[i].Decode(d)
	}
	return v
}

// Stat is a znode's metadata as clients see it.
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last data change
	Ctime          int64 // ms since the epoch
	Mtime          int64
	Version        int32 // data version
	Cversion       int32 // children version
	Aversion       int32 // ACL version
	EphemeralOwner int64 // session id of the owner, 0 if persistent
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // zxid of the last children change
}

// StatSize is the encoded size of a Stat.
const StatSize = 68

func (s *Stat) Encode(e *Encoder) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

func (s *Stat) Decode(d *Decoder) {
	s.Czxid = d.Long("stat.czxid")
	s.Mzxid = d.Long("stat.mzxid")
	s.Ctime = d.Long("stat.ctime")
	s.Mtime = d.Long("stat.mtime")
	s.Version = d.Int("stat.version")
	s.Cversion = d.Int("stat.cversion")
	s.Aversion = d.Int("stat.aversion")
	s.EphemeralOwner = d.Long("stat.ephemeralOwner")
	s.DataLength = d.Int("stat.dataLength")
	s.NumChildren = d.Int("stat.numChildren")
	s.Pzxid = d.Long("stat.pzxid")
}

// ConnectRequest opens or resumes a session. Newer clients append a read-only byte;
// HasReadOnly records whether it was there so the response can echo the style.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32 // ms
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int("connect.protocolVersion")
	r.LastZxidSeen = d.Long("connect.lastZxidSeen")
	r.TimeOut = d.Int("connect.timeOut")
	r.SessionID = d.Long("connect.sessionId")
	r.Passwd = d.Buffer("connect.passwd")
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool("connect.readOnly")
	}
}

// ConnectResponse answers a ConnectRequest. A zero SessionID and TimeOut tell the
// client its session expired (or its password was wrong).
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int("connectResponse.protocolVersion")
	r.TimeOut = d.Int("connectResponse.timeOut")
	r.SessionID = d.Long("connectResponse.sessionId")
	r.Passwd = d.Buffer("connectResponse.passwd")
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool("connectResponse.readOnly")
	}
}

// RequestHeader starts every request after the handshake.
type RequestHeader struct {
	Xid  int32
	Type Op
}

func (h *RequestHeader) Encode(e *Encoder) { e.Int(h.Xid); e.Int(int32(h.Type)) }
func (h *RequestHeader) Decode(d *Decoder) {
	h.Xid = d.Int("header.xid")
	h.Type = Op(d.Int("header.type"))
}

// ReplyHeader starts every reply and watch event.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

// ReplyHeaderSize is the encoded size of a ReplyHeader.
const ReplyHeaderSize = 16

func (h *ReplyHeader) Encode(e *Encoder) { e.Int(h.Xid); e.Long(h.Zxid); e.Int(int32(h.Err)) }
func (h *ReplyHeader) Decode(d *Decoder) {
	h.Xid = d.Int("reply.xid")
	h.Zxid = d.Long("reply.zxid")
	h.Err = Code(d.Int("reply.err"))
}

// CreateRequest creates a znode (ops create, create2, createContainer).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32 // a Mode* constant
}

func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int(r.Flags)
}

func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String("create.path")
	r.Data = d.Buffer("create.data")
	r.ACL = decodeACLs(d)
	r.Flags = d.Int("create.flags")
}

// CreateTTLRequest creates a znode with a time to live (op createTTL).
type CreateTTLRequest struct {
	CreateRequest
	TTL int64 // ms
}

func (r *CreateTTLRequest) Encode(e *Encoder) { r.CreateRequest.Encode(e); e.Long(r.TTL) }
func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.CreateRequest.Decode(d)
	r.TTL = d.Long("createTTL.ttl")
}

// PathVersionRequest is the body of delete and check (version -1 matches any).
type PathVersionRequest struct {
	Path    string
	Version int32
}

func (r *PathVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }
func (r *PathVersionRequest) Decode(d *Decoder) {
	r.Path = d.String("path")
	r.Version = d.Int("version")
}

// PathWatchRequest is the body of exists, getData, getChildren and getChildren2.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

func (r *PathWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }
func (r *PathWatchRequest) Decode(d *Decoder) {
	r.Path = d.String("path")
	r.Watch = d.Bool("watch")
}

// PathRequest is the body of sync and getACL; PathResponse answers create and sync.
type PathRequest struct{ Path string }

func (r *PathRequest) Encode(e *Encoder) { e.String(r.Path) }
func (r *PathRequest) Decode(d *Decoder) { r.Path = d.String("path") }

// SetDataRequest replaces a znode's data if its version matches (-1 matches any).
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int(r.Version) }
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String("setData.path")
	r.Data = d.Buffer("setData.data")
	r.Version = d.Int("setData.version")
}

// SetACLRequest replaces a znode's ACL.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

func (r *SetACLRequest) Encode(e *Encoder) { e.String(r.Path); encodeACLs(e, r.ACL); e.Int(r.Version) }
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String("setACL.path")
	r.ACL = decodeACLs(d)
	r.Version = d.Int("setACL.version")
}

// SetWatches re-arms a reconnecting client's watches. RelativeZxid is the last zxid
// the client saw: anything changed after it fires at once.
type SetWatches struct {
	RelativeZxid int64
	Data         []string
	Exist        []string
	Child        []string
}

func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.Data)
	e.Strings(r.Exist)
	e.Strings(r.Child)
}

func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Long("setWatches.relativeZxid")
	r.Data = d.Strings("setWatches.dataWatches")
	r.Exist = d.Strings("setWatches.existWatches")
	r.Child = d.Strings("setWatches.childWatches")
}

// AuthPacket adds credentials to a connection (op auth).
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

func (r *AuthPacket) Encode(e *Encoder) { e.Int(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }
func (r *AuthPacket) Decode(d *Decoder) {
	r.Type = d.Int("auth.type")
	r.Scheme = d.String("auth.scheme")
	r.Auth = d.Buffer("auth.auth")
}

// SASLPacket is a SASL token, both ways (op sasl: jute's GetSASLRequest and
// SetSASLResponse): the client's response, the server's challenge.
type SASLPacket struct{ Token []byte }

func (r *SASLPacket) Encode(e *Encoder) { e.Buffer(r.Token) }
func (r *SASLPacket) Decode(d *Decoder) { r.Token = d.Buffer("sasl.token") }

// Empty is the body of ping, close and other body-less messages.
type Empty struct{}

func (Empty) Encode(*Encoder) {}
func (Empty) Decode(*Decoder) {}

// Unknown keeps the raw body of a request type this codec does not decode, so the
// server can answer it with CodeUnimplemented instead of dropping the connection.
type Unknown struct{ Body []byte }

func (u *Unknown) Encode(e *Encoder) { e.b = append(e.b, u.Body...) }
func (u *Unknown) Decode(d *Decoder) { u.Body = append([]byte{}, d.take(d.Remaining(), "body")...) }

// PathResponse answers create and sync.
type PathResponse struct{ Path string }

func (r *PathResponse) Encode(e *Encoder) { e.String(r.Path) }
func (r *PathResponse) Decode(d *Decoder) { r.Path = d.String("path") }

// Create2Response answers create2: the created path and its Stat.
type Create2Response struct {
	Path string
	Stat Stat
}

func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }
func (r *Create2Response) Decode(d *Decoder) { r.Path = d.String("path"); r.Stat.Decode(d) }

// StatResponse answers exists, setData and setACL.
type StatResponse struct{ Stat Stat }

func (r *StatResponse) Encode(e *Encoder) { r.Stat.Encode(e) }
func (r *StatResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

// GetDataResponse answers getData.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }
func (r *GetDataResponse) Decode(d *Decoder) { r.Data = d.Buffer("data"); r.Stat.Decode(d) }

// GetChildrenResponse answers getChildren.
type GetChildrenResponse struct{ Children []string }

func (r *GetChildrenResponse) Encode(e *Encoder) { e.Strings(r.Children) }
func (r *GetChildrenResponse) Decode(d *Decoder) { r.Children = d.Strings("children") }

// GetChildren2Response answers getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

func (r *GetChildren2Response) Encode(e *Encoder) { e.Strings(r.Children); r.Stat.Encode(e) }
func (r *GetChildren2Response) Decode(d *Decoder) {
	r.Children = d.Strings("children")
	r.Stat.Decode(d)
}

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

func (r *GetACLResponse) Encode(e *Encoder) { encodeACLs(e, r.ACL); r.Stat.Encode(e) }
func (r *GetACLResponse) Decode(d *Decoder) { r.ACL = decodeACLs(d); r.Stat.Decode(d) }

// WatcherEvent is the body of a watch notification (reply xid -1).
type WatcherEvent struct {
	Type  EventType
	State int32
	Path  string
}

func (r *WatcherEvent) Encode(e *Encoder) { e.Int(int32(r.Type)); e.Int(r.State); e.String(r.Path) }
func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = EventType(d.Int("event.type"))
	r.State = d.Int("event.state")
	r.Path = d.String("event.path")
}

// EphemeralsResponse answers getEphemerals: the session's ephemeral paths.
type EphemeralsResponse struct{ Paths []string }

func (r *EphemeralsResponse) Encode(e *Encoder) { e.Strings(r.Paths) }
func (r *EphemeralsResponse) Decode(d *Decoder) { r.Paths = d.Strings("ephemerals") }

// CountResponse answers getAllChildrenNumber.
type CountResponse struct{ Total int32 }

func (r *CountResponse) Encode(e *Encoder) { e.Int(r.Total) }
func (r *CountResponse) Decode(d *Decoder) { r.Total = d.Int("totalNumber") }

// AuthInfo is one identity of a connection, as whoAmI lists them.
type AuthInfo struct{ Scheme, User string }

// WhoAmIResponse answers whoAmI: the connection's identities, in the order it got them.
type WhoAmIResponse struct{ Info []AuthInfo }

func (r *WhoAmIResponse) Encode(e *Encoder) {
	e.Int(int32(len(r.Info)))
	for _, a := range r.Info {
		e.String(a.Scheme)
		e.String(a.User)
	}
}

func (r *WhoAmIResponse) Decode(d *Decoder) {
	n, null := d.length("clientInfo", 8)
	if null {
		r.Info = nil
		return
	}
	r.Info = make([]AuthInfo, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Info[i] = AuthInfo{d.String("authScheme"), d.String("user")}
	}
}

// Watch modes of addWatch (AddWatchMode).
const (
	WatchPersistent          int32 = 0
	WatchPersistentRecursive int32 = 1
)

// Watcher types of removeWatches and checkWatches (WatcherType).
const (
	WatcherChildren            int32 = 1
	WatcherData                int32 = 2
	WatcherAny                 int32 = 3
	WatcherPersistent          int32 = 4
	WatcherPersistentRecursive int32 = 5
)

// PathModeRequest is the body of addWatch (mode: a watch mode) and of removeWatches
// and checkWatches (mode: a watcher type).
type PathModeRequest struct {
	Path string
	Mode int32
}

func (r *PathModeRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Mode) }
func (r *PathModeRequest) Decode(d *Decoder) { r.Path = d.String("path"); r.Mode = d.Int("mode") }

// ErrorResponse is the body ZooKeeper answers addWatch with: a code, 0.
type ErrorResponse struct{ Err int32 }

func (r *ErrorResponse) Encode(e *Encoder) { e.Int(r.Err) }
func (r *ErrorResponse) Decode(d *Decoder) { r.Err = d.Int("err") }

// SetWatches2 is setWatches with the persistent watches too (ZooKeeper 3.6+).
type SetWatches2 struct {
	SetWatches
	Persistent, Recursive []string
}

func (r *SetWatches2) Encode(e *Encoder) {
	r.SetWatches.Encode(e)
	e.Strings(r.Persistent)
	e.Strings(r.Recursive)
}

func (r *SetWatches2) Decode(d *Decoder) {
	r.SetWatches.Decode(d)
	r.Persistent = d.Strings("setWatches2.persistentWatches")
	r.Recursive = d.Strings("setWatches2.persistentRecursiveWatches")
}
