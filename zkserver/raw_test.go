package zkserver

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zkproto"
)

// TestConnectNegotiation checks the timeout clamp (ZooKeeper's 2..20 ticks) and
// that the response has the read-only byte exactly when the request had it.
func TestConnectNegotiation(t *testing.T) {
	f := startServer(t, Config{ServerID: 7}, nil) // tick 50ms: timeouts within [100ms, 1s]
	cases := []struct {
		askMs, wantMs int32
		readOnly      bool
	}{
		{1, 100, true}, {1, 100, false}, {500, 500, true}, {10_000_000, 1000, false}, {-5, 100, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%dms-ro=%v", tc.askMs, tc.readOnly), func(t *testing.T) {
			c := rawConnect(t, f.addr, zkproto.ConnectRequest{TimeOut: tc.askMs, Passwd: make([]byte, 16), HasReadOnly: tc.readOnly})
			if c.resp.TimeOut != tc.wantMs || c.resp.SessionID == 0 || len(c.resp.Passwd) != 16 {
				t.Fatalf("response %+v, want timeout %d", c.resp, tc.wantMs)
			}
			if c.resp.HasReadOnly != tc.readOnly || c.resp.ReadOnly {
				t.Fatalf("read-only byte: present %v (want %v), value %v", c.resp.HasReadOnly, tc.readOnly, c.resp.ReadOnly)
			}
			if id := c.resp.SessionID; id>>56 != 7 {
				t.Fatalf("session id %x does not carry server id 7", id)
			}
		})
	}
	t.Run("config", func(t *testing.T) {
		if _, err := New(Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Millisecond}, f.b); err == nil {
			t.Fatal("min > max accepted")
		}
		if _, err := New(Config{ServerID: 256}, f.b); err == nil {
			t.Fatal("server id 256 accepted")
		}
	})
}

// TestReconnect resumes a session on a new connection, and refuses bad ones the way
// ZooKeeper does: zero timeout and session, 16 zero password bytes, then close.
func TestReconnect(t *testing.T) {
	f := startServer(t, Config{}, nil)
	first := newRaw(t, f.addr)
	id, pw := first.resp.SessionID, first.resp.Passwd

	again := rawConnect(t, f.addr, zkproto.ConnectRequest{TimeOut: 2000, SessionID: id, Passwd: pw})
	if again.resp.SessionID != id || string(again.resp.Passwd) != string(pw) {
		t.Fatalf("resumed session %x, want %x", again.resp.SessionID, id)
	}
	expectClosed(t, first.nc) // the stale connection of the session is dropped
	if h, _ := again.call(zkproto.OpExists, &zkproto.PathWatchRequest{Path: "/"}); h.Err != zkproto.CodeOK {
		t.Fatalf("exists on resumed session: %v", h.Err)
	}

	bad := append([]byte{}, pw...)
	bad[0] ^= 1
	for name, req := range map[string]zkproto.ConnectRequest{
		"wrong password":  {TimeOut: 2000, SessionID: id, Passwd: bad, HasReadOnly: true},
		"unknown session": {TimeOut: 2000, SessionID: id + 1, Passwd: pw},
	} {
		t.Run(name, func(t *testing.T) {
			c := rawConnect(t, f.addr, req)
			want := zkproto.ExpiredConnectResponse(req)
			if string(zkproto.Marshal(&c.resp)) != string(zkproto.Marshal(&want)) {
				t.Fatalf("response %+v, want %+v", c.resp, want)
			}
			expectClosed(t, c.nc)
		})
	}

	// After a close, the session cannot be resumed.
	if h, _ := again.call(zkproto.OpCloseSession, &zkproto.Empty{}); h.Err != zkproto.CodeOK || h.Zxid == 0 {
		t.Fatalf("close reply %+v", h)
	}
	expectClosed(t, again.nc)
	c := rawConnect(t, f.addr, zkproto.ConnectRequest{TimeOut: 2000, SessionID: id, Passwd: pw})
	if c.resp.SessionID != 0 {
		t.Fatalf("closed session %x resumed", id)
	}
}

// TestZxidAheadRefused: a client that has seen a later zxid than the server's is
// refused (connection closed, no answer); one that has seen exactly it is accepted.
func TestZxidAheadRefused(t *testing.T) {
	t.Parallel() // waits on go-zookeeper's 1s reconnect backoff or a JVM
	f := startServer(t, Config{}, nil)
	c := newRaw(t, f.addr)
	c.call(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/z", ACL: zkproto.OpenACL})
	last := int64(f.b.LastZxid())

	nc := dialRaw(t, f.addr)
	req := zkproto.ConnectRequest{LastZxidSeen: last + 1, TimeOut: 2000, Passwd: make([]byte, 16)}
	nc.Write(zkproto.AppendFrame(nil, zkproto.Marshal(&req)))
	expectClosed(t, nc)

	ok := rawConnect(t, f.addr, zkproto.ConnectRequest{LastZxidSeen: last, TimeOut: 2000, Passwd: make([]byte, 16)})
	if ok.resp.SessionID == 0 {
		t.Fatal("client at the server's zxid refused")
	}

	// The real client, having seen this server's zxid, is refused by a fresh server
	// and keeps trying; sent back to its server, it resumes its session.
	fresh := startServer(t, Config{}, nil)
	var target atomic.Value
	target.Store(f.addr)
	var freshDials atomic.Int32
	var g gate
	dial := func(network, _ string, timeout time.Duration) (net.Conn, error) {
		addr := target.Load().(string)
		if addr == fresh.addr {
			freshDials.Add(1)
		}
		return g.dial(network, addr, timeout)
	}
	zc, events, err := zk.Connect([]string{"127.0.0.1:1"}, time.Second, zk.WithLogger(quietLogger{}), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	waitState(t, events, zk.StateHasSession)
	sid := zc.SessionID()
	if _, err := zc.Create("/more", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	target.Store(fresh.addr)
	g.shut()
	g.open()
	eventually(t, "client retried the fresh server", func() bool { return freshDials.Load() >= 2 })
	fresh.b.Read(func(tr *datatree.Tree) {
		if n := len(tr.Sessions()); n != 0 {
			t.Errorf("fresh server has %d sessions", n)
		}
	})
	target.Store(f.addr)
	waitState(t, events, zk.StateHasSession)
	if zc.SessionID() != sid {
		t.Fatalf("session %x, want %x", zc.SessionID(), sid)
	}
}

// TestMalformedFrames: a connection that sends a broken frame is closed; every
// other session keeps working.
func TestMalformedFrames(t *testing.T) {
	f := startServer(t, Config{MaxFrame: 4096}, nil)
	healthy := f.connect(t, time.Second)
	be32 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	cases := []struct {
		name      string
		handshake bool   // send after a valid handshake
		raw       []byte // bytes sent
	}{
		{"negative length", true, be32(-5)},
		{"length over the limit", true, be32(4097)},
		{"header cut short", true, append(be32(3), 0, 0, 1)},
		{"frame cut short then EOF", true, append(be32(100), 1, 2, 3)},
		{"connect request too short", false, append(be32(3), 'a', 'b', 'c')},
		{"connect length over the limit", false, be32(1 << 30)},
		{"connect with bad password length", false, append(be32(28), append(make([]byte, 24), 0x7f, 0, 0, 0)...)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var nc net.Conn
			if tc.handshake {
				c := newRaw(t, f.addr)
				nc = c.nc
			} else {
				nc = dialRaw(t, f.addr)
			}
			if _, err := nc.Write(tc.raw); err != nil {
				t.Fatal(err)
			}
			if tc.name == "frame cut short then EOF" {
				nc.(*net.TCPConn).CloseWrite()
			}
			expectClosed(t, nc)
			if _, err := healthy.Create(fmt.Sprintf("/ok%d", i), nil, 0, acl); err != nil {
				t.Fatalf("healthy session after %s: %v", tc.name, err)
			}
		})
	}
}

// TestUndecodableRequests: a body that does not parse gets ZooKeeper's marshalling
// error and the session goes on; an unknown op gets unimplemented and a hang-up.
func TestUndecodableRequests(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := newRaw(t, f.addr)
	c.xid++
	frame := zkproto.EncodeRequest(zkproto.RequestHeader{Xid: c.xid, Type: zkproto.OpGetData}, nil)
	frame = append(frame, 0, 0) // a path length cut in half
	c.nc.Write(zkproto.AppendFrame(nil, frame))
	if h, _ := c.recv(zkproto.OpGetData); h.Xid != c.xid || h.Err != zkproto.CodeMarshallingError {
		t.Fatalf("reply %+v, want marshalling error", h)
	}
	if h, _ := c.call(zkproto.OpExists, &zkproto.PathWatchRequest{Path: "/"}); h.Err != zkproto.CodeOK {
		t.Fatalf("session unusable after a bad body: %v", h.Err)
	}
	for _, op := range []zkproto.Op{zkproto.OpReconfig} {
		body := zkproto.NewRequest(op)
		if h, _ := c.call(op, body); h.Err != zkproto.CodeUnimplemented {
			t.Fatalf("%v: %v, want unimplemented", op, h.Err)
		}
	}
	if h, _ := c.call(zkproto.Op(999), &zkproto.Unknown{Body: []byte("abc")}); h.Err != zkproto.CodeUnimplemented {
		t.Fatalf("unknown op: %v", h.Err)
	}
	expectClosed(t, c.nc)
}

// TestPipelining sends a burst without waiting: replies come back in request
// order, each read sees the writes sent before it, and every reply carries the zxid
// the server had reached.
func TestPipelining(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := newRaw(t, f.addr)
	type sent struct {
		xid int32
		op  zkproto.Op
	}
	var reqs []sent
	var burst []byte
	add := func(op zkproto.Op, body zkproto.Message) {
		c.xid++
		reqs = append(reqs, sent{c.xid, op})
		burst = zkproto.AppendFrame(burst, zkproto.EncodeRequest(zkproto.RequestHeader{Xid: c.xid, Type: op}, body))
	}
	const n = 300
	for i := range n {
		p := fmt.Sprintf("/p%d", i)
		add(zkproto.OpCreate, &zkproto.CreateRequest{Path: p, Data: []byte(p), ACL: zkproto.OpenACL})
		add(zkproto.OpGetData, &zkproto.PathWatchRequest{Path: p})
		if i%50 == 0 {
			c.xid++
			reqs = append(reqs, sent{zkproto.XidPing, zkproto.OpPing})
			burst = zkproto.AppendFrame(burst, zkproto.EncodeRequest(zkproto.RequestHeader{Xid: zkproto.XidPing, Type: zkproto.OpPing}, nil))
		}
	}
	go c.nc.Write(burst)
	var lastZxid int64
	for i, r := range reqs {
		h, body := c.recv(r.op)
		if h.Xid != r.xid || h.Err != zkproto.CodeOK {
			t.Fatalf("reply %d: xid %d err %v, want xid %d ok", i, h.Xid, h.Err, r.xid)
		}
		if h.Zxid < lastZxid {
			t.Fatalf("reply %d: zxid went back from %x to %x", i, lastZxid, h.Zxid)
		}
		lastZxid = h.Zxid
		if r.op == zkproto.OpGetData {
			// The read ran after its session's create and before the next one.
			if gd := body.(*zkproto.GetDataResponse); h.Zxid != gd.Stat.Czxid {
				t.Fatalf("reply %d: read at zxid %x, its node created at %x", i, h.Zxid, gd.Stat.Czxid)
			}
		}
	}
	if lastZxid != int64(f.b.LastZxid()) {
		t.Fatalf("last reply zxid %x, server at %x", lastZxid, f.b.LastZxid())
	}
}

// heldBackend is the standalone backend with a commit delay under test control, the
// way a replicated backend answers a write only after a quorum: writes queue until
// release applies them in order.
type heldBackend struct {
	*Standalone
	mu      sync.Mutex
	held    []datatree.Txn
	chans   []chan Outcome
	serving atomic.Bool
	syncs   atomic.Int32
}

// startHeld starts a server on a serving heldBackend.
func startHeld(t *testing.T) (*fixture, *heldBackend) {
	t.Helper()
	sb := NewStandalone(datatree.New(), nil)
	hb := &heldBackend{Standalone: sb}
	hb.serving.Store(true)
	return startWith(t, Config{Tick: testTick}, hb, sb), hb
}

func (h *heldBackend) Submit(txn datatree.Txn) <-chan Outcome {
	if txn.Type == datatree.OpCreateSession {
		return h.Standalone.Submit(txn)
	}
	ch := make(chan Outcome, 1)
	h.mu.Lock()
	h.held = append(h.held, txn)
	h.chans = append(h.chans, ch)
	h.mu.Unlock()
	return ch
}

func (h *heldBackend) Sync() <-chan error {
	h.syncs.Add(1)
	return h.Standalone.Sync()
}

func (h *heldBackend) submitted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

func (h *heldBackend) release() {
	h.mu.Lock()
	held, chans := h.held, h.chans
	h.held, h.chans = nil, nil
	h.mu.Unlock()
	for i, txn := range held {
		chans[i] <- Outcome{Result: h.apply(txn)}
	}
}

func (h *heldBackend) Status() BackendStatus {
	st := h.Standalone.Status()
	st.Serving = h.serving.Load()
	return st
}

// TestWritesPipelined: consecutive writes are in flight together; a read between
// writes holds back the writes behind it until it has run.
func TestWritesPipelined(t *testing.T) {
	f, hb := startHeld(t)
	c := newRaw(t, f.addr)
	var burst []byte
	ops := []zkproto.Op{zkproto.OpCreate, zkproto.OpCreate, zkproto.OpSetData, zkproto.OpGetData, zkproto.OpDelete}
	bodies := []zkproto.Message{
		&zkproto.CreateRequest{Path: "/a", ACL: zkproto.OpenACL},
		&zkproto.CreateRequest{Path: "/b", ACL: zkproto.OpenACL},
		&zkproto.SetDataRequest{Path: "/a", Data: []byte("x"), Version: 0},
		&zkproto.PathWatchRequest{Path: "/a"},
		&zkproto.PathVersionRequest{Path: "/a", Version: 1},
	}
	for i, op := range ops {
		burst = zkproto.AppendFrame(burst, zkproto.EncodeRequest(zkproto.RequestHeader{Xid: int32(i + 1), Type: op}, bodies[i]))
	}
	c.nc.Write(burst)
	eventually(t, "all 5 requests in the pipeline", func() bool { return f.srv.Status().Outstanding == 5 })
	if n := hb.submitted(); n != 3 {
		t.Fatalf("%d writes submitted before any committed, want the 3 ahead of the read", n)
	}
	hb.release()
	for i, op := range ops[:4] {
		h, body := c.recv(op)
		if h.Xid != int32(i+1) || h.Err != zkproto.CodeOK {
			t.Fatalf("reply %d: %+v", i, h)
		}
		if op == zkproto.OpGetData && string(body.(*zkproto.GetDataResponse).Data) != "x" {
			t.Fatalf("read missed its session's earlier write: %+v", body)
		}
	}
	eventually(t, "the delete behind the read submitted", func() bool { return hb.submitted() == 1 })
	hb.release()
	if h, _ := c.recv(zkproto.OpDelete); h.Xid != 5 || h.Err != zkproto.CodeOK {
		t.Fatalf("delete reply %+v", h)
	}
}

// TestPingHoldsBackNothing: a ping between writes is answered in its turn, but the
// writes behind it go to the leader at once (it reads nothing a later write could
// change), as ZooKeeper forwards them.
func TestPingHoldsBackNothing(t *testing.T) {
	f, hb := startHeld(t)
	c := newRaw(t, f.addr)
	var burst []byte
	burst = zkproto.AppendFrame(burst, zkproto.EncodeRequest(zkproto.RequestHeader{Xid: 1, Type: zkproto.OpCreate}, &zkproto.CreateRequest{Path: "/a", ACL: zkproto.OpenACL}))
	burst = zkproto.AppendFrame(burst, zkproto.EncodeRequest(zkproto.RequestHeader{Xid: zkproto.XidPing, Type: zkproto.OpPing}, nil))
	burst = zkproto.AppendFrame(burst, zkproto.EncodeRequest(zkproto.RequestHeader{Xid: 2, Type: zkproto.OpCreate}, &zkproto.CreateRequest{Path: "/b", ACL: zkproto.OpenACL}))
	c.nc.Write(burst)
	eventually(t, "both writes submitted with the ping between them unanswered", func() bool { return hb.submitted() == 2 })
	hb.release()
	if h, _ := c.recv(zkproto.OpCreate); h.Xid != 1 || h.Err != zkproto.CodeOK {
		t.Fatalf("first reply %+v", h)
	}
	if h, _ := c.recv(zkproto.OpPing); h.Xid != zkproto.XidPing {
		t.Fatalf("second reply %+v, want the ping's", h)
	}
	if h, _ := c.recv(zkproto.OpCreate); h.Xid != 2 || h.Err != zkproto.CodeOK {
		t.Fatalf("third reply %+v", h)
	}
}

// TestNotServing: while the replica has no quorum, clients are turned away and the
// four-letter words say so; CloseConnections drops the connected ones.
func TestNotServing(t *testing.T) {
	f, hb := startHeld(t)
	connected := newRaw(t, f.addr)

	hb.serving.Store(false)
	f.srv.CloseConnections()
	expectClosed(t, connected.nc)
	nc := dialRaw(t, f.addr)
	req := zkproto.ConnectRequest{TimeOut: 2000, Passwd: make([]byte, 16)}
	nc.Write(zkproto.AppendFrame(nil, zkproto.Marshal(&req)))
	expectClosed(t, nc)
	for _, w := range []string{"srvr", "stat", "mntr"} {
		if got := fourLetter(t, f.addr, w); got != zkproto.NotServing {
			t.Errorf("%s while not serving: %q", w, got)
		}
	}
	if got := fourLetter(t, f.addr, "ruok"); got != "imok" {
		t.Errorf("ruok while not serving: %q", got)
	}
	hb.serving.Store(true)
	newRaw(t, f.addr)
}

// TestCreate2AndReplyZxids: create2 answers with the new node's stat, and every
// reply carries the zxid the server had reached (the write's own zxid for a write).
func TestCreate2AndReplyZxids(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := newRaw(t, f.addr)
	h, body := c.call(zkproto.OpCreate2, &zkproto.CreateRequest{Path: "/c-", Data: []byte("v"), ACL: zkproto.OpenACL, Flags: zkproto.ModeEphemeralSequential})
	cr, ok := body.(*zkproto.Create2Response)
	if h.Err != zkproto.CodeOK || !ok || cr.Path != "/c-0000000000" {
		t.Fatalf("create2: %+v %+v", h, body)
	}
	if cr.Stat.Czxid != h.Zxid || cr.Stat.EphemeralOwner != c.resp.SessionID || cr.Stat.DataLength != 1 {
		t.Fatalf("create2 stat %+v (reply zxid %x, session %x)", cr.Stat, h.Zxid, c.resp.SessionID)
	}
	h2, ex := c.call(zkproto.OpExists, &zkproto.PathWatchRequest{Path: cr.Path})
	if ex.(*zkproto.StatResponse).Stat != cr.Stat || h2.Zxid != h.Zxid {
		t.Fatalf("exists %+v at %x, create2 gave %+v at %x", ex, h2.Zxid, cr.Stat, h.Zxid)
	}
	if h, body := c.call(zkproto.OpCreate2, &zkproto.CreateRequest{Path: cr.Path, ACL: zkproto.OpenACL}); h.Err != zkproto.CodeNodeExists || body != nil {
		t.Fatalf("create2 existing: %+v %+v", h, body)
	}
	// Another session's write moves the zxid every reply carries, pings included.
	other := newRaw(t, f.addr)
	hw, _ := other.call(zkproto.OpSetData, &zkproto.SetDataRequest{Path: cr.Path, Data: []byte("w"), Version: -1})
	c.nc.Write(zkproto.AppendFrame(nil, zkproto.EncodeRequest(zkproto.RequestHeader{Xid: zkproto.XidPing, Type: zkproto.OpPing}, nil)))
	if hp, _ := c.recv(zkproto.OpPing); hp.Xid != zkproto.XidPing || hp.Zxid != hw.Zxid {
		t.Fatalf("ping reply %+v, want zxid %x", hp, hw.Zxid)
	}
	hk, kids := c.call(zkproto.OpGetChildren, &zkproto.PathWatchRequest{Path: "/"})
	if got := kids.(*zkproto.GetChildrenResponse).Children; hk.Zxid != hw.Zxid || !slices.Contains(got, "c-0000000000") {
		t.Fatalf("getChildren %v at %x", got, hk.Zxid)
	}
	// An auth scheme ZooKeeper does not ship is refused, and the connection closed.
	if h, _ := other.call(zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "kerberos", Auth: []byte("x")}); h.Err != zkproto.CodeAuthFailed {
		t.Fatalf("auth: %+v", h)
	}
	expectClosed(t, other.nc)
}

// TestReconnectUnknownSessionSyncsFirst: before calling a session with a valid
// password expired, the server catches up with the leader (it may just lag the
// replica that created the session); a bad password needs no such care.
func TestReconnectUnknownSessionSyncsFirst(t *testing.T) {
	f, hb := startHeld(t)
	const id = 0x0500000000000042
	c := rawConnect(t, f.addr, zkproto.ConnectRequest{TimeOut: 2000, SessionID: id, Passwd: sessionPassword(defaultSecret, id)})
	if c.resp.SessionID != 0 || hb.syncs.Load() != 1 {
		t.Fatalf("response %+v after %d syncs, want expired after 1", c.resp, hb.syncs.Load())
	}
	rawConnect(t, f.addr, zkproto.ConnectRequest{TimeOut: 2000, SessionID: id, Passwd: make([]byte, 16)})
	if hb.syncs.Load() != 1 {
		t.Fatalf("%d syncs for a bad password", hb.syncs.Load())
	}
}
