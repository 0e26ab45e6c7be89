package zkserver

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zkproto"
)

const (
	// maxPipeline bounds a session's requests in flight; past it the reader stops
	// reading and TCP pushes back on the client.
	maxPipeline = 1024
	// maxOutbound bounds the bytes queued for a client that does not read; past it
	// the connection is dropped rather than letting it eat the server's memory.
	maxOutbound = 64 << 20
)

// conn is one client connection with an established session. Three goroutines:
// the reader decodes requests into the pipeline, the processor completes them in
// order and queues their replies, the writer flushes the queue.
//
// Writes are pipelined: a write is submitted as soon as no read (or other
// non-write) of the session is ahead of it still unexecuted, so runs of writes are
// in flight together, but a read never sees a write its session sent after it,
// and reply zxids never go back: ZooKeeper's per-session order.
type conn struct {
	srv     *Server
	nc      net.Conn
	sid     int64
	timeout time.Duration
	log     *slog.Logger

	pmu      sync.Mutex
	auth     []datatree.ID // who the client is: its ip, the digests it added; replaced, never changed in place
	sasl     *digestMD5    // its SASL exchange, once begun (the processor's alone)
	items    []*item       // requests in arrival order, not completed yet
	barriers int           // barrier items (reads and the like) in items
	slots    chan struct{} // one per item in flight: bounds the pipeline
	more     chan struct{} // wakes the processor

	outMu      sync.Mutex
	out        []byte
	flushClose bool // close once out is flushed
	wake       chan struct{}

	done     chan struct{}
	killOnce sync.Once
	closing  atomic.Bool // the client asked to close its session

	queued, recved, sentN atomic.Int64
}

// item is one request in the pipeline: a write (op set, submitted once no
// non-write is ahead of it) or anything else (run set). Both run on the processor
// goroutine in arrival order, queue the reply, and return false to end the
// connection.
type item struct {
	hdr     zkproto.RequestHeader
	recv    time.Time
	op      *datatree.Op
	outcome <-chan Outcome // once submitted
	run     func() bool
	// barrier holds back the writes behind it until it has run: a read must not see
	// a later write of its session. A ping reads nothing and holds back nothing.
	barrier bool
	// A request ZooKeeper refuses before it reaches the tree still consumes a
	// zxid there (an error txn): poled submits a no-op for it and answers this.
	refuse      zkproto.Code
	refuseMulti []zkproto.OpResult
	// subTypes are a multi's op types: a container's or TTL node's create answers
	// with a create2 result, a plain create with a create one.
	subTypes []zkproto.Op
}

func newConn(s *Server, nc net.Conn, sid int64, timeout time.Duration) *conn {
	return &conn{
		srv: s, nc: nc, sid: sid, timeout: timeout, auth: []datatree.ID{ipID(nc.RemoteAddr())},
		log:   s.log.With("session", fmt.Sprintf("0x%x", sid), "remote", nc.RemoteAddr().String()),
		slots: make(chan struct{}, maxPipeline), more: make(chan struct{}, 1),
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// kill closes the connection now. It only closes things, so it is safe from any
// goroutine and under any lock; the reader cleans up.
func (c *conn) kill() {
	c.killOnce.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

// send queues a frame for the writer (a copy is kept; b may be reused).
func (c *conn) send(b []byte) {
	c.outMu.Lock()
	over := len(c.out)+len(b) > maxOutbound
	if !over {
		c.out = append(c.out, b...)
	}
	c.outMu.Unlock()
	if over {
		c.log.Warn("client does not read its replies, dropping the connection")
		c.kill()
		return
	}
	c.srv.sent.Add(1)
	c.sentN.Add(1)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// closeAfterFlush closes the connection once everything queued so far is written.
func (c *conn) closeAfterFlush() {
	c.outMu.Lock()
	c.flushClose = true
	c.outMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) writer() {
	var buf []byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.outMu.Lock()
		buf, c.out = c.out, buf[:0]
		closeNow := c.flushClose
		c.outMu.Unlock()
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
			if _, err := c.nc.Write(buf); err != nil {
				c.kill()
				return
			}
		}
		if closeNow {
			c.kill()
			return
		}
	}
}

// push appends a request to the pipeline, submitting it if it is a write with no
// non-write ahead of it. It blocks while the pipeline is full.
func (c *conn) push(it *item) bool {
	select {
	case c.slots <- struct{}{}:
	case <-c.done:
		return false
	}
	c.pmu.Lock()
	c.items = append(c.items, it)
	if it.barrier {
		c.barriers++
	} else if it.op != nil && c.barriers == 0 {
		c.submit(it)
	}
	c.pmu.Unlock()
	c.queued.Add(1)
	c.srv.outstanding.Add(1)
	select {
	case c.more <- struct{}{}:
	default:
	}
	return true
}

// submit hands a write to the backend; pmu is held, so submissions keep the
// session's order.
func (c *conn) submit(it *item) {
	it.outcome = c.srv.b.Submit(datatree.Txn{Session: c.sid, Auth: c.auth, Op: *it.op})
}

// pop removes the completed head item; when it was a non-write, the writes behind
// it up to the next non-write may now go.
func (c *conn) pop() {
	c.pmu.Lock()
	head := c.items[0]
	c.items[0] = nil
	c.items = c.items[1:]
	if head.barrier {
		c.barriers--
		for _, it := range c.items {
			if it.barrier {
				break
			}
			if it.op != nil && it.outcome == nil {
				c.submit(it)
			}
		}
	}
	c.pmu.Unlock()
	<-c.slots
	c.queued.Add(-1)
	c.srv.outstanding.Add(-1)
	c.srv.latency(time.Since(head.recv))
}

func (c *conn) processor() {
	for {
		c.pmu.Lock()
		var it *item
		if len(c.items) > 0 {
			it = c.items[0]
		}
		c.pmu.Unlock()
		if it == nil {
			select {
			case <-c.more:
				continue
			case <-c.done:
				return
			}
		}
		var ok bool
		if it.op != nil {
			ok = c.completeWrite(it)
		} else {
			ok = it.run()
		}
		c.pop()
		if !ok {
			c.closeAfterFlush() // replies queued so far still go out
			return
		}
	}
}

// run serves the connection until it closes; the caller's goroutine is the reader.
func (c *conn) run() {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.writer() }()
	go func() { defer wg.Done(); c.processor() }()
	err := c.reader()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		c.log.Info("connection closed", "err", err)
	}
	c.kill()
	wg.Wait()
	// Requests still queued were never answered: the client sees a connection loss.
	c.srv.outstanding.Add(-c.queued.Load())
	c.srv.unregister(c)
}

func (c *conn) reader() error {
	// Buffered: a frame in one read, and the frames a client pipelined in the same one.
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.timeout))
		frame, err := zkproto.ReadFrame(r, c.srv.cfg.MaxFrame)
		if err != nil {
			return err
		}
		c.srv.received.Add(1)
		c.recved.Add(1)
		c.srv.b.Touch(c.sid)
		hdr, req, err := zkproto.DecodeRequest(frame)
		if len(frame) < 8 {
			return fmt.Errorf("malformed request: %w", err)
		}
		it := &item{hdr: hdr, recv: time.Now()}
		if err != nil {
			// ZooKeeper answers a body it cannot parse with a marshalling error.
			c.log.Info("undecodable request", "err", err)
			it.run = func() bool { return c.replyCode(hdr.Xid, zkproto.CodeMarshallingError) }
		} else {
			c.prepare(it, req)
		}
		if !c.push(it) {
			return nil
		}
		if hdr.Type == zkproto.OpCloseSession {
			// Nothing after a close counts; the processor hangs up once it is answered.
			select {
			case <-c.done:
			case <-time.After(c.srv.cfg.HandshakeTimeout + c.timeout):
			}
			return nil
		}
	}
}

// prepare fills a pipeline item from a decoded request: the state change of a
// write, or the function that runs anything else.
func (c *conn) prepare(it *item, req zkproto.Message) {
	// Before, a ping held back the session's later writes for a write's round trip,
	// every third of a session timeout (docs/performance.md has what that cost a busy
	// session). ZooKeeper forwards them at once; only its reads wait for the writes
	// before them.
	defer func() { it.barrier = it.op == nil && it.hdr.Type != zkproto.OpPing }()
	it.op, it.run = c.prepareOp(it.hdr, req)
	if r, ok := req.(*zkproto.MultiRequest); ok && it.hdr.Type == zkproto.OpMulti {
		for _, op := range r.Ops {
			it.subTypes = append(it.subTypes, op.Type)
		}
	}
	if it.op != nil || it.run != nil {
		return
	}
	// Refused before the tree: ZooKeeper logs an error txn, which takes a zxid.
	noop := datatree.Noop()
	it.op = &noop
	switch r := req.(type) {
	case *zkproto.CreateRequest, *zkproto.CreateTTLRequest:
		_, it.refuse = c.createOp(it.hdr.Type, r)
	case *zkproto.SetACLRequest:
		it.refuse = zkproto.CodeInvalidACL // aclRefused
	case *zkproto.MultiRequest:
		_, failAt, code := c.multiOps(r)
		it.refuseMulti = zkproto.FailedMulti(len(r.Ops), failAt, code)
	}
}

// prepareOp returns the state change of a write, the function that runs anything
// else, or neither for a write that must be refused.
func (c *conn) prepareOp(h zkproto.RequestHeader, req zkproto.Message) (*datatree.Op, func() bool) {
	write := func(op datatree.Op) (*datatree.Op, func() bool) { return &op, nil }
	code := func(code zkproto.Code) (*datatree.Op, func() bool) {
		return nil, func() bool { return c.replyCode(h.Xid, code) }
	}
	switch h.Type {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		op, refuse := c.createOp(h.Type, req)
		if refuse != zkproto.CodeOK {
			return nil, nil
		}
		return write(op)
	case zkproto.OpSetACL:
		r := req.(*zkproto.SetACLRequest)
		if c.aclRefused(r.ACL) {
			return nil, nil
		}
		return write(datatree.SetACL(r.Path, treeACL(r.ACL), r.Version))
	case zkproto.OpDelete:
		r := req.(*zkproto.PathVersionRequest)
		return write(datatree.Delete(r.Path, r.Version))
	case zkproto.OpSetData:
		r := req.(*zkproto.SetDataRequest)
		return write(datatree.SetData(r.Path, r.Data, r.Version))
	case zkproto.OpCheck:
		r := req.(*zkproto.PathVersionRequest)
		return write(datatree.Check(r.Path, r.Version))
	case zkproto.OpMulti:
		r := req.(*zkproto.MultiRequest)
		ops, failAt, _ := c.multiOps(r)
		if failAt >= 0 {
			return nil, nil
		}
		return write(datatree.Multi(ops...))
	case zkproto.OpCloseSession:
		c.closing.Store(true)
		return write(datatree.CloseSession())
	case zkproto.OpSync:
		path := req.(*zkproto.PathRequest).Path
		return nil, func() bool {
			select {
			case err := <-c.srv.b.Sync():
				if err != nil {
					c.log.Info("sync failed, dropping the connection", "err", err)
					return false
				}
			case <-c.done:
				return false
			}
			return c.replyRead(h.Xid, &zkproto.PathResponse{Path: path})
		}
	case zkproto.OpExists, zkproto.OpGetData, zkproto.OpGetChildren, zkproto.OpGetChildren2,
		zkproto.OpGetACL, zkproto.OpPing, zkproto.OpSetWatches, zkproto.OpMultiRead,
		zkproto.OpGetEphemerals, zkproto.OpGetAllChildren, zkproto.OpWhoAmI,
		zkproto.OpAddWatch, zkproto.OpRemoveWatches, zkproto.OpCheckWatches, zkproto.OpSetWatches2:
		return nil, func() bool { c.read(h, req); return true }
	case zkproto.OpAuth:
		r := req.(*zkproto.AuthPacket)
		return nil, func() bool { return c.addAuth(h.Xid, r) }
	case zkproto.OpSASL:
		r := req.(*zkproto.SASLPacket)
		return nil, func() bool { return c.saslStep(h.Xid, r.Token) }
	case zkproto.OpReconfig:
		return code(zkproto.CodeUnimplemented)
	}
	// An op ZooKeeper does not know either: it answers unimplemented and hangs up.
	return nil, func() bool {
		c.replyCode(h.Xid, zkproto.CodeUnimplemented)
		return false
	}
}

// addAuth adds the identities of an auth packet to the connection; a scheme
// ZooKeeper has no provider for gets AuthFailed and the connection closes, as there.
// ZooKeeper answers auth with zxid 0.
func (c *conn) addAuth(xid int32, r *zkproto.AuthPacket) bool {
	ids := c.srv.identities(r.Scheme, r.Auth, c.nc.RemoteAddr())
	if ids == nil {
		c.reply(zkproto.ReplyHeader{Xid: xid, Err: zkproto.CodeAuthFailed}, nil)
		return false
	}
	c.addIDs(ids...)
	c.reply(zkproto.ReplyHeader{Xid: xid}, nil)
	return true
}

// addIDs adds identities the connection has proven.
func (c *conn) addIDs(ids ...datatree.ID) {
	c.pmu.Lock()
	auth := slices.Clone(c.auth)
	for _, id := range ids {
		if !slices.Contains(auth, id) {
			auth = append(auth, id)
		}
	}
	c.auth = auth
	c.pmu.Unlock()
}

// aclRefused reports an ACL the client port refuses as invalid before the tree
// sees it: an empty one, or one of the sasl scheme with no SASL provider.
func (c *conn) aclRefused(acl []zkproto.ACL) bool {
	return len(acl) == 0 || !c.srv.cfg.SASLProvider && slices.ContainsFunc(acl, func(a zkproto.ACL) bool { return a.Scheme == "sasl" })
}

// saslStep answers one SASL token. A failed exchange gets AuthFailed and the
// connection closes, as ZooKeeper does (its session stays, to expire).
func (c *conn) saslStep(xid int32, token []byte) bool {
	if c.srv.cfg.SASLUsers == nil {
		// No SASL login configured: ZooKeeper answers every token with a null one.
		c.reply(zkproto.ReplyHeader{Xid: xid}, &zkproto.SASLPacket{})
		return true
	}
	if c.sasl == nil {
		c.sasl = &digestMD5{users: c.srv.cfg.SASLUsers}
	}
	reply, user, err := c.sasl.next(token)
	if err != nil {
		c.log.Warn("client failed to SASL authenticate", "err", err)
		c.reply(zkproto.ReplyHeader{Xid: xid, Err: zkproto.CodeAuthFailed}, nil)
		return false
	}
	if user != "" {
		c.addIDs(datatree.ID{Scheme: "sasl", ID: user})
	}
	c.reply(zkproto.ReplyHeader{Xid: xid}, &zkproto.SASLPacket{Token: reply})
	return true
}

// createOp is the state change of a create of any kind (create, create2,
// createContainer, createTTL), or the code ZooKeeper refuses it with before it
// reaches the tree: a TTL mode without the extended types is unimplemented, a TTL out
// of range (or one for a mode without) bad arguments, an empty ACL invalid.
func (c *conn) createOp(typ zkproto.Op, req zkproto.Message) (datatree.Op, zkproto.Code) {
	var r *zkproto.CreateRequest
	ttl := int64(-1) // what ZooKeeper's non-TTL creates carry
	switch v := req.(type) {
	case *zkproto.CreateRequest:
		r = v
	case *zkproto.CreateTTLRequest:
		r, ttl = &v.CreateRequest, v.TTL
	}
	mode := datatree.CreateMode(r.Flags)
	switch { // in ZooKeeper's order: the extended types, the TTL, the ACL
	case mode.IsTTL() && !c.srv.cfg.ExtendedTypes:
		return datatree.Op{}, zkproto.CodeUnimplemented
	case mode.IsTTL() && (ttl <= 0 || ttl > datatree.MaxTTL), !mode.IsTTL() && ttl >= 0:
		return datatree.Op{}, zkproto.CodeBadArguments
	case c.aclRefused(r.ACL):
		return datatree.Op{}, zkproto.CodeInvalidACL
	}
	switch {
	case typ == zkproto.OpCreateContainer:
		mode = datatree.Container // its txn makes a container whatever the flags
	case mode.IsContainer():
		mode = datatree.Persistent // a plain create's txn knows ephemeral or not only
	}
	if !mode.IsTTL() {
		ttl = 0
	}
	return datatree.CreateTTL(r.Path, r.Data, mode, treeACL(r.ACL), ttl), zkproto.CodeOK
}

// multiOps converts a multi's ops; on an op poled cannot run it returns the index
// and code of the failure ZooKeeper would report.
func (c *conn) multiOps(r *zkproto.MultiRequest) (ops []datatree.Op, failAt int, code zkproto.Code) {
	for i, op := range r.Ops {
		switch op.Type {
		case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
			cop, code := c.createOp(op.Type, op.Req)
			if code != zkproto.CodeOK {
				return nil, i, code
			}
			ops = append(ops, cop)
		case zkproto.OpDelete:
			pv := op.Req.(*zkproto.PathVersionRequest)
			ops = append(ops, datatree.Delete(pv.Path, pv.Version))
		case zkproto.OpCheck:
			pv := op.Req.(*zkproto.PathVersionRequest)
			ops = append(ops, datatree.Check(pv.Path, pv.Version))
		case zkproto.OpSetData:
			sd := op.Req.(*zkproto.SetDataRequest)
			ops = append(ops, datatree.SetData(sd.Path, sd.Data, sd.Version))
		default:
			return nil, i, zkproto.CodeBadArguments
		}
	}
	return ops, -1, 0
}

// completeWrite waits for a submitted write and answers it.
func (c *conn) completeWrite(it *item) bool {
	var out Outcome
	select {
	case out = <-it.outcome:
	case <-c.done:
		return false
	}
	if out.Err != nil {
		// The outcome is unknown: hang up, the client reports a connection loss.
		c.log.Info("write outcome unknown, dropping the connection", "op", it.hdr.Type, "err", out.Err)
		return false
	}
	hdr, body := writeReply(it.hdr, it.subTypes, out.Result)
	switch {
	case it.refuse != zkproto.CodeOK:
		hdr.Err, body = it.refuse, nil
	case it.refuseMulti != nil:
		body = &zkproto.MultiResponse{Results: it.refuseMulti}
	}
	if c.srv.cfg.Replied != nil {
		c.srv.cfg.Replied(hdr.Zxid, it.recv)
	}
	c.reply(hdr, body)
	return it.hdr.Type != zkproto.OpCloseSession
}

// writeReply is the reply to a write, from its result.
func writeReply(h zkproto.RequestHeader, subTypes []zkproto.Op, res datatree.Result) (zkproto.ReplyHeader, zkproto.Message) {
	hdr := zkproto.ReplyHeader{Xid: h.Xid, Zxid: int64(res.Zxid), Err: zkproto.Code(res.Err)}
	if h.Type == zkproto.OpMulti {
		// A failed multi is not an error reply: each op carries its own code.
		hdr.Err = zkproto.CodeOK
		out := &zkproto.MultiResponse{Results: make([]zkproto.OpResult, len(res.Ops))}
		for i, r := range res.Ops {
			o := &out.Results[i]
			o.Type, o.Err = zkproto.Op(r.Type), zkproto.Code(r.Err)
			switch r.Type {
			case datatree.OpCreate:
				// ZooKeeper 3.8 answers a create or create2 in a multi with a plain create
				// result, a createContainer or createTTL with a create2 one.
				o.Path = r.Path
				if t := subTypes[i]; t == zkproto.OpCreateContainer || t == zkproto.OpCreateTTL {
					o.Type, o.Stat = zkproto.OpCreate2, stat(r.Stat)
				}
			case datatree.OpSetData:
				o.Stat = stat(r.Stat)
			}
		}
		return hdr, out
	}
	switch h.Type {
	case zkproto.OpCreate:
		return hdr, &zkproto.PathResponse{Path: res.Path}
	case zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		return hdr, &zkproto.Create2Response{Path: res.Path, Stat: stat(res.Stat)}
	case zkproto.OpSetData, zkproto.OpSetACL:
		return hdr, &zkproto.StatResponse{Stat: stat(res.Stat)}
	}
	return hdr, nil
}

// read runs a local read, registers its watch, and queues its reply, all under the
// backend's read lock: a change applied after the read fires the watch, and its
// event cannot overtake this reply (clients arm a watch when its reply arrives).
func (c *conn) read(h zkproto.RequestHeader, req zkproto.Message) {
	c.srv.b.Read(func(t *datatree.Tree) {
		hdr := zkproto.ReplyHeader{Xid: h.Xid, Zxid: int64(t.LastZxid())}
		var body zkproto.Message
		var err error
		switch h.Type {
		case zkproto.OpPing:
			hdr.Xid = zkproto.XidPing // whatever xid the ping had, as ZooKeeper
		case zkproto.OpExists:
			r := req.(*zkproto.PathWatchRequest)
			var st datatree.Stat
			if st, err = t.Stat(r.Path); err == nil {
				body = &zkproto.StatResponse{Stat: stat(st)}
			}
			if r.Watch { // an exists watch is armed even on a missing node
				c.srv.watches.add(c, dataWatch, r.Path)
			}
		case zkproto.OpGetData:
			r := req.(*zkproto.PathWatchRequest)
			var data []byte
			var st datatree.Stat
			if err = t.Permit(r.Path, c.auth, datatree.PermRead); err != nil {
				break
			}
			if data, st, err = t.Get(r.Path); err == nil {
				body = &zkproto.GetDataResponse{Data: data, Stat: stat(st)}
				if r.Watch {
					c.srv.watches.add(c, dataWatch, r.Path)
				}
			}
		case zkproto.OpGetChildren, zkproto.OpGetChildren2:
			r := req.(*zkproto.PathWatchRequest)
			var kids []string
			var st datatree.Stat
			if err = t.Permit(r.Path, c.auth, datatree.PermRead); err != nil {
				break
			}
			if kids, st, err = t.Children(r.Path); err == nil {
				if h.Type == zkproto.OpGetChildren {
					body = &zkproto.GetChildrenResponse{Children: kids}
				} else {
					body = &zkproto.GetChildren2Response{Children: kids, Stat: stat(st)}
				}
				if r.Watch {
					c.srv.watches.add(c, childWatch, r.Path)
				}
			}
		case zkproto.OpGetACL:
			body, err = c.getACL(t, req.(*zkproto.PathRequest).Path)
		case zkproto.OpSetWatches:
			c.setWatches(t, req.(*zkproto.SetWatches))
		case zkproto.OpSetWatches2:
			r := req.(*zkproto.SetWatches2)
			c.setWatches(t, &r.SetWatches)
			for _, p := range r.Persistent {
				c.srv.watches.add(c, persistentData, p)
				c.srv.watches.add(c, persistentChild, p)
			}
			for _, p := range r.Recursive {
				c.srv.watches.add(c, recursiveData, p)
				c.srv.watches.add(c, recursiveChild, p)
			}
		case zkproto.OpAddWatch:
			r := req.(*zkproto.PathModeRequest)
			switch r.Mode {
			case zkproto.WatchPersistent:
				c.srv.watches.add(c, persistentData, r.Path)
				c.srv.watches.add(c, persistentChild, r.Path)
			case zkproto.WatchPersistentRecursive:
				c.srv.watches.add(c, recursiveData, r.Path)
				c.srv.watches.add(c, recursiveChild, r.Path)
			default:
				err = datatree.MarshallingError // ZooKeeper 3.8 cannot read the mode
			}
			body = &zkproto.ErrorResponse{}
		case zkproto.OpRemoveWatches, zkproto.OpCheckWatches:
			err = c.removeWatches(h.Type == zkproto.OpRemoveWatches, req.(*zkproto.PathModeRequest))
		case zkproto.OpGetEphemerals:
			body = &zkproto.EphemeralsResponse{Paths: ephemerals(t, c.sid, req.(*zkproto.PathRequest).Path)}
		case zkproto.OpGetAllChildren:
			path := req.(*zkproto.PathRequest).Path
			var n int
			if err = t.Permit(path, c.auth, datatree.PermRead); err == nil {
				n, err = t.Descendants(path)
				body = &zkproto.CountResponse{Total: int32(n)}
			}
		case zkproto.OpWhoAmI:
			r := &zkproto.WhoAmIResponse{Info: []zkproto.AuthInfo{}}
			for _, id := range c.auth {
				r.Info = append(r.Info, zkproto.AuthInfo{Scheme: id.Scheme, User: userOf(id)})
			}
			body = r
		case zkproto.OpMultiRead:
			body = c.multiRead(t, req.(*zkproto.MultiRequest))
		}
		hdr.Err = zkproto.Code(datatree.CodeOf(err))
		c.reply(hdr, body)
	})
}

// removeWatches removes (or, checkWatches, only looks for) the session's watches
// of a type on a path: NoWatcher when it has none.
func (c *conn) removeWatches(remove bool, r *zkproto.PathModeRequest) error {
	child := []watchKind{childWatch, persistentChild, recursiveChild}
	data := []watchKind{dataWatch, persistentData, recursiveData}
	var kinds []watchKind
	switch r.Mode {
	case zkproto.WatcherChildren:
		kinds = child
	case zkproto.WatcherData:
		kinds = data
	case zkproto.WatcherAny:
		kinds = append(child, data...)
	default:
		// ZooKeeper 3.8.0 reads no other type (not even its Persistent ones).
		return datatree.MarshallingError
	}
	found := false
	for _, k := range kinds {
		key := watchKey{k, r.Path}
		if remove {
			found = c.srv.watches.remove(c, key) || found
		} else {
			found = found || c.srv.watches.has(c, key)
		}
	}
	if !found {
		return noWatcher
	}
	return nil
}

// noWatcher is ZooKeeper's answer to removing a watch that is not there.
var noWatcher = datatree.Code(zkproto.CodeNoWatcher)

// ephemerals is getEphemerals' answer: the session's ephemerals whose path starts
// with prefix (as a string: "/a" matches "/ab"); empty or "/" is all of them.
func ephemerals(t *datatree.Tree, sid int64, prefix string) []string {
	out := []string{}
	for _, p := range t.Ephemerals(sid) {
		if prefix == "" || strings.TrimSpace(prefix) == "/" || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// getACL answers getACL: READ or ADMIN needed; without ADMIN the digests' hashes
// are masked, as ZooKeeper 3.8 does.
func (c *conn) getACL(t *datatree.Tree, path string) (zkproto.Message, error) {
	if err := t.Permit(path, c.auth, datatree.PermRead|datatree.PermAdmin); err != nil {
		return nil, err
	}
	acl, st, err := t.ACL(path)
	if err != nil {
		return nil, err
	}
	if t.Permit(path, c.auth, datatree.PermAdmin) != nil {
		acl = datatree.MaskDigests(acl)
	}
	return &zkproto.GetACLResponse{ACL: wireACL(acl), Stat: stat(st)}, nil
}

// setWatches re-arms a reconnecting client's watches; anything that changed after
// the last zxid it saw fires at once instead (ZooKeeper's DataTree.setWatches).
func (c *conn) setWatches(t *datatree.Tree, r *zkproto.SetWatches) {
	event := func(typ zkproto.EventType, path string) { c.send(zkproto.AppendEvent(nil, typ, path)) }
	for _, p := range r.Data {
		switch st, err := t.Stat(p); {
		case err != nil:
			event(zkproto.EventNodeDeleted, p)
		case st.Mzxid > r.RelativeZxid:
			event(zkproto.EventNodeDataChanged, p)
		default:
			c.srv.watches.add(c, dataWatch, p)
		}
	}
	for _, p := range r.Exist {
		if t.Exists(p) {
			event(zkproto.EventNodeCreated, p)
		} else {
			c.srv.watches.add(c, dataWatch, p)
		}
	}
	for _, p := range r.Child {
		switch st, err := t.Stat(p); {
		case err != nil:
			event(zkproto.EventNodeDeleted, p)
		case st.Pzxid > r.RelativeZxid:
			event(zkproto.EventNodeChildrenChanged, p)
		default:
			c.srv.watches.add(c, childWatch, p)
		}
	}
}

// multiRead runs getData and getChildren ops; each fails or succeeds on its own.
func (c *conn) multiRead(t *datatree.Tree, r *zkproto.MultiRequest) *zkproto.MultiResponse {
	out := &zkproto.MultiResponse{Results: make([]zkproto.OpResult, len(r.Ops))}
	for i, op := range r.Ops {
		res := &out.Results[i]
		path := ""
		if pw, ok := op.Req.(*zkproto.PathWatchRequest); ok {
			path = pw.Path
		}
		var err error
		switch op.Type {
		case zkproto.OpGetData:
			var data []byte
			var st datatree.Stat
			if err = t.Permit(path, c.auth, datatree.PermRead); err != nil {
				break
			}
			if data, st, err = t.Get(path); err == nil {
				*res = zkproto.OpResult{Type: zkproto.OpGetData, Data: data, Stat: stat(st)}
			}
		case zkproto.OpGetChildren:
			var kids []string
			if err = t.Permit(path, c.auth, datatree.PermRead); err != nil {
				break
			}
			if kids, _, err = t.Children(path); err == nil {
				*res = zkproto.OpResult{Type: zkproto.OpGetChildren, Children: kids}
			}
		default:
			err = datatree.BadArguments
		}
		if err != nil {
			*res = zkproto.OpResult{Type: zkproto.OpError, Err: zkproto.Code(datatree.CodeOf(err))}
		}
	}
	return out
}

// replyRead answers with the current zxid.
func (c *conn) replyRead(xid int32, body zkproto.Message) bool {
	c.srv.b.Read(func(t *datatree.Tree) {
		c.reply(zkproto.ReplyHeader{Xid: xid, Zxid: int64(t.LastZxid())}, body)
	})
	return true
}

// replyCode answers with an error code and the current zxid.
func (c *conn) replyCode(xid int32, code zkproto.Code) bool {
	c.srv.b.Read(func(t *datatree.Tree) {
		c.reply(zkproto.ReplyHeader{Xid: xid, Zxid: int64(t.LastZxid()), Err: code}, nil)
	})
	return true
}

func (c *conn) reply(h zkproto.ReplyHeader, body zkproto.Message) {
	c.send(zkproto.AppendReply(nil, h, body))
}

func stat(s datatree.Stat) zkproto.Stat {
	return zkproto.Stat{
		Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner,
		DataLength: s.DataLength, NumChildren: s.NumChildren, Pzxid: s.Pzxid,
	}
}
