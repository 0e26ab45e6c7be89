package zkproto

import "fmt"

// NewRequest returns an empty request body for op; ops this codec does not know
// get *Unknown, which keeps the raw bytes.
func NewRequest(op Op) Message {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete, OpCheck:
		return &PathVersionRequest{}
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpGetACL, OpSync, OpGetEphemerals, OpGetAllChildren:
		return &PathRequest{}
	case OpWhoAmI:
		return &Empty{}
	case OpSetACL:
		return &SetACLRequest{}
	case OpMulti, OpMultiRead:
		return &MultiRequest{}
	case OpSetWatches:
		return &SetWatches{}
	case OpSetWatches2:
		return &SetWatches2{}
	case OpAddWatch, OpRemoveWatches, OpCheckWatches:
		return &PathModeRequest{}
	case OpAuth:
		return &AuthPacket{}
	case OpSASL:
		return &SASLPacket{}
	case OpPing, OpCloseSession:
		return &Empty{}
	}
	return &Unknown{}
}

// NewResponse returns an empty reply body for op (what a successful reply carries).
func NewResponse(op Op) Message {
	switch op {
	case OpCreate, OpSync:
		return &PathResponse{}
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return &Create2Response{}
	case OpExists, OpSetData, OpSetACL:
		return &StatResponse{}
	case OpGetData:
		return &GetDataResponse{}
	case OpGetChildren:
		return &GetChildrenResponse{}
	case OpGetChildren2:
		return &GetChildren2Response{}
	case OpGetACL:
		return &GetACLResponse{}
	case OpMulti, OpMultiRead:
		return &MultiResponse{}
	case OpGetEphemerals:
		return &EphemeralsResponse{}
	case OpGetAllChildren:
		return &CountResponse{}
	case OpWhoAmI:
		return &WhoAmIResponse{}
	case OpAddWatch:
		return &ErrorResponse{}
	case OpSASL:
		return &SASLPacket{}
	}
	return &Empty{}
}

// DecodeRequest decodes the body of one request frame (everything after the
// handshake): the header, then the body its type calls for. Trailing bytes are
// ignored, as ZooKeeper's jute does. On error the header is returned if it parsed.
func DecodeRequest(frame []byte) (RequestHeader, Message, error) {
	d := NewDecoder(frame)
	var h RequestHeader
	h.Decode(d)
	if err := d.Err(); err != nil {
		return h, nil, fmt.Errorf("zkproto: request header: %w", err)
	}
	body := NewRequest(h.Type)
	body.Decode(d)
	if err := d.Err(); err != nil {
		return h, nil, fmt.Errorf("zkproto: %v request (xid %d): %w", h.Type, h.Xid, err)
	}
	return h, body, nil
}

// EncodeRequest is the client side of DecodeRequest: header and body, unframed.
func EncodeRequest(h RequestHeader, body Message) []byte {
	e := NewEncoder(nil)
	h.Encode(e)
	if body != nil {
		body.Encode(e)
	}
	return e.Bytes()
}

// DecodeConnectRequest decodes the first frame of a connection.
func DecodeConnectRequest(frame []byte) (ConnectRequest, error) {
	var r ConnectRequest
	d := NewDecoder(frame)
	r.Decode(d)
	if err := d.Err(); err != nil {
		return r, fmt.Errorf("zkproto: connect request: %w", err)
	}
	return r, nil
}

// AppendReply appends a framed reply: header, then body unless the header carries an
// error (ZooKeeper sends no body with an error) or body is nil. A watch event
// (xid -1) always carries its body.
func AppendReply(dst []byte, h ReplyHeader, body Message) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	e := NewEncoder(dst)
	h.Encode(e)
	if body != nil && (h.Err == CodeOK || h.Xid == XidWatchEvent) {
		body.Encode(e)
	}
	dst = e.Bytes()
	n := uint32(len(dst) - start - 4)
	dst[start], dst[start+1], dst[start+2], dst[start+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return dst
}

// AppendEvent appends a framed watch notification. Like ZooKeeper 3.8 it carries
// zxid -1 and state SyncConnected.
func AppendEvent(dst []byte, typ EventType, path string) []byte {
	return AppendReply(dst, ReplyHeader{Xid: XidWatchEvent, Zxid: -1}, &WatcherEvent{Type: typ, State: StateSyncConnected, Path: path})
}

// DecodeReply is the client side of AppendReply for a request of type op (frame
// without its length). A watch event (xid -1) decodes as *WatcherEvent whatever op
// is; an error reply has a nil body.
func DecodeReply(op Op, frame []byte) (ReplyHeader, Message, error) {
	d := NewDecoder(frame)
	var h ReplyHeader
	h.Decode(d)
	if err := d.Err(); err != nil {
		return h, nil, fmt.Errorf("zkproto: reply header: %w", err)
	}
	var body Message
	switch {
	case h.Xid == XidWatchEvent:
		body = &WatcherEvent{}
	case h.Err != CodeOK:
		return h, nil, nil
	default:
		body = NewResponse(op)
	}
	body.Decode(d)
	if err := d.Err(); err != nil {
		return h, nil, fmt.Errorf("zkproto: %v reply: %w", op, err)
	}
	return h, body, nil
}

// ExpiredConnectResponse is what ZooKeeper answers to a reconnect whose session is
// gone or whose password is wrong: zero timeout and session, 16 zero password bytes.
func ExpiredConnectResponse(req ConnectRequest) ConnectResponse {
	return ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: req.HasReadOnly}
}
