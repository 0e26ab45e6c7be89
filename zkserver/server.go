package zkserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zkproto"
)

// DefaultVersion is the version line the four-letter words print. It follows the
// ZooKeeper 3.4 date style so go-zookeeper's FLWSrvr parses it too.
const DefaultVersion = "3.8.0-poled, built on 01/01/2026 00:00 GMT"

// defaultSecret keys session passwords when Config.Secret is empty. Every replica
// of one cluster must use the same secret, or reconnects to another server fail.
var defaultSecret = []byte("poled session password key")

// Config configures a Server. Zero values take ZooKeeper's defaults.
type Config struct {
	ServerID          int64         // 0..255, the top byte of the session ids this server makes
	Tick              time.Duration // ZooKeeper's tickTime; default 2s
	MinSessionTimeout time.Duration // default 2*Tick
	MaxSessionTimeout time.Duration // default 20*Tick
	Secret            []byte        // session password key, the same on every replica
	MaxFrame          int           // largest request accepted; default zkproto.DefaultMaxFrame
	Version           string        // four-letter-word version line; default DefaultVersion
	HandshakeTimeout  time.Duration // time a new connection has to complete its handshake; default 10s
	Logger            *slog.Logger  // default: discard
	// FourLetterWords is the 4lw whitelist ("*" for all); empty, every word poled answers.
	FourLetterWords []string
	// SuperDigest, "super:base64(sha1(super:password))", is the digest user every ACL admits.
	SuperDigest string
	// SASLUsers are the DIGEST-MD5 users and passwords (ReadJAAS); nil, a SASL
	// exchange fails as it does on a ZooKeeper with no JAAS Server section.
	SASLUsers map[string]string
	// SASLProvider registers the sasl ACL scheme (ZooKeeper's
	// authProvider.N=org.apache.zookeeper.server.auth.SASLAuthenticationProvider);
	// without it a sasl ACL is invalid.
	SASLProvider bool
	// ExtendedTypes allows TTL nodes (ZooKeeper's extendedTypesEnabled).
	ExtendedTypes bool
	// Replied, if set, hears about each write just before its reply is queued: its zxid and
	// when its request was read (the latency anatomy of a run). It must not block.
	Replied func(zxid int64, recv time.Time)
}

func (c *Config) fill() error {
	if c.Tick == 0 {
		c.Tick = 2 * time.Second
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.Tick
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 20 * c.Tick
	}
	if len(c.Secret) == 0 {
		c.Secret = defaultSecret
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = zkproto.DefaultMaxFrame
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.ServerID < 0 || c.ServerID > 255:
		return fmt.Errorf("zkserver: ServerID %d outside 0..255", c.ServerID)
	case c.Tick < 0 || c.MinSessionTimeout < 0 || c.HandshakeTimeout < 0 || c.MaxFrame < 0:
		return errors.New("zkserver: negative duration or size in config")
	case c.MinSessionTimeout > c.MaxSessionTimeout:
		return fmt.Errorf("zkserver: MinSessionTimeout %v > MaxSessionTimeout %v", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.MaxSessionTimeout > math.MaxInt32*time.Millisecond:
		return fmt.Errorf("zkserver: MaxSessionTimeout %v too large", c.MaxSessionTimeout)
	}
	return nil
}

// Server is the client port of one replica.
type Server struct {
	cfg     Config
	b       Backend
	log     *slog.Logger
	watches *watches
	start   time.Time

	mu        sync.Mutex
	ids       *sessionIDs
	accepted  map[net.Conn]struct{} // every open socket, sessions or not
	conns     map[*conn]struct{}    // connections with a session
	bySession map[int64]*conn
	stopping  bool

	received    atomic.Int64
	sent        atomic.Int64
	outstanding atomic.Int64
	latMu       sync.Mutex
	latMin      int64
	latMax      int64
	latSum      int64
	latN        int64

	wg sync.WaitGroup
}

// New returns a server in front of b.
func New(cfg Config, b Backend) (*Server, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	now := time.Now()
	return &Server{
		cfg: cfg, b: b, log: cfg.Logger, watches: newWatches(), start: now,
		ids: newSessionIDs(cfg.ServerID, now), accepted: map[net.Conn]struct{}{}, conns: map[*conn]struct{}{},
		bySession: map[int64]*conn{},
		latMin:    -1,
	}, nil
}

// Serve accepts clients on ln until ctx is done or ln fails, then closes ln and
// every client connection and returns once all of them are gone.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var err error
	for {
		var nc net.Conn
		nc, err = ln.Accept()
		if err != nil {
			break
		}
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.accepted[nc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(nc)
			s.mu.Lock()
			delete(s.accepted, nc)
			s.mu.Unlock()
		}()
	}
	ln.Close()
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.CloseConnections()
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("zkserver: accept: %w", err)
}

// CloseConnections drops every client connection, handshaking ones too (sessions
// live on). The replica calls it when it stops serving, e.g. when it loses its
// leader, as ZooKeeper does.
func (s *Server) CloseConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.kill()
	}
	for nc := range s.accepted {
		nc.Close()
	}
}

// Applied must be called by the backend for every transaction it applies; see
// Backend. It fires the watches the transaction triggers and drops the connection
// of a session that was closed other than by its own client's request (expiry).
func (s *Server) Applied(txn datatree.Txn, res datatree.Result) {
	for _, ev := range res.Events {
		s.watches.fire(ev)
	}
	if txn.Type == datatree.OpCloseSession {
		s.mu.Lock()
		c := s.bySession[txn.Session]
		s.mu.Unlock()
		if c != nil && !c.closing.Load() {
			// Events already queued (e.g. from this very close) still go out.
			s.log.Info("session closed, dropping its connection", "session", fmt.Sprintf("0x%x", txn.Session))
			c.closeAfterFlush()
		}
	}
}

// Status is what the four-letter words report.
func (s *Server) Status() zkproto.Status {
	return s.status("", true)
}

// status builds the Status; self is the address of a four-letter-word connection
// asking, which ZooKeeper lists and counts too. Counting sessions walks them all,
// so only mntr asks for it.
func (s *Server) status(self string, sessions bool) zkproto.Status {
	bs := s.b.Status()
	st := zkproto.Status{
		Version: s.cfg.Version, Serving: bs.Serving, Mode: bs.Mode,
		Received: s.received.Load(), Sent: s.sent.Load(), Outstanding: s.outstanding.Load(),
		Watches: s.watches.count(), UptimeMs: time.Since(s.start).Milliseconds(),
		Followers: bs.Followers, SyncedFollowers: bs.SyncedFollowers, PendingSyncs: bs.PendingSyncs,
		Env: environment(),
	}
	s.b.Read(func(t *datatree.Tree) {
		st.Zxid = int64(t.LastZxid())
		// ZooKeeper's node map holds the root twice ("" and "/"), so its count is
		// one more than the znodes; match it so both flavors read alike.
		st.NodeCount = int64(t.NodeCount()) + 1
		st.Ephemerals = int64(t.EphemeralCount())
		st.DataSize = t.ApproximateSize()
		if sessions {
			st.Sessions = int64(len(t.Sessions()))
		}
	})
	s.latMu.Lock()
	if s.latN > 0 {
		st.MinLatency, st.MaxLatency = s.latMin, s.latMax
		st.AvgLatency = float64(s.latSum) / float64(s.latN)
	}
	s.latMu.Unlock()
	s.mu.Lock()
	for c := range s.conns {
		st.Clients = append(st.Clients, zkproto.ClientInfo{
			Addr: c.nc.RemoteAddr().String(), InterestOps: 1,
			Queued: c.queued.Load(), Received: c.recved.Load(), Sent: c.sentN.Load(),
		})
	}
	s.mu.Unlock()
	if self != "" {
		st.Clients = append(st.Clients, zkproto.ClientInfo{Addr: self, Received: 1})
	}
	return st
}

// environment is envi's lines about the host and process, keyed as ZooKeeper keys them.
func environment() []string {
	host, _ := os.Hostname()
	dir, _ := os.Getwd()
	return []string{"host.name=" + host, "os.name=" + runtime.GOOS, "os.arch=" + runtime.GOARCH,
		"user.dir=" + dir, "go.version=" + runtime.Version()}
}

// whitelisted reports whether the configuration lets word be answered.
func (s *Server) whitelisted(word string) bool {
	if len(s.cfg.FourLetterWords) == 0 {
		return true
	}
	for _, w := range s.cfg.FourLetterWords {
		if w == "*" || w == word {
			return true
		}
	}
	return false
}

func (s *Server) latency(d time.Duration) {
	ms := d.Milliseconds()
	s.latMu.Lock()
	defer s.latMu.Unlock()
	if s.latMin < 0 || ms < s.latMin {
		s.latMin = ms
	}
	s.latMax = max(s.latMax, ms)
	s.latSum += ms
	s.latN++
}

func (s *Server) clampTimeout(ms int32) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	return min(max(d, s.cfg.MinSessionTimeout), s.cfg.MaxSessionTimeout)
}

// handle runs one connection from its first byte to its close.
func (s *Server) handle(nc net.Conn) {
	defer nc.Close()
	log := s.log.With("remote", nc.RemoteAddr().String())
	nc.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	var first [4]byte
	if _, err := io.ReadFull(nc, first[:]); err != nil {
		return
	}
	s.received.Add(1)
	if word, ok := zkproto.FourLetterWord(first); ok {
		answer := zkproto.NotWhitelisted(word)
		if s.whitelisted(word) {
			answer = zkproto.Answer(word, s.status(nc.RemoteAddr().String(), word == "mntr"))
		}
		io.WriteString(nc, answer)
		s.sent.Add(1)
		return
	}
	body, err := zkproto.ReadFrameBody(nc, int32(binary.BigEndian.Uint32(first[:])), s.cfg.MaxFrame)
	if err != nil {
		log.Info("bad connect frame, closing", "err", err)
		return
	}
	req, err := zkproto.DecodeConnectRequest(body)
	if err != nil {
		log.Info("bad connect request, closing", "err", err)
		return
	}
	c, err := s.handshake(nc, req, log)
	if err != nil {
		log.Info("connection refused", "err", err)
		return
	}
	if c == nil {
		return
	}
	nc.SetDeadline(time.Time{})
	c.run()
}

// handshake admits a client: a new session, or a resumed one. It returns nil and no
// error after answering a reconnect of an expired session.
func (s *Server) handshake(nc net.Conn, req zkproto.ConnectRequest, log *slog.Logger) (*conn, error) {
	if !s.b.Status().Serving {
		return nil, errors.New("not serving")
	}
	var last int64
	var known bool
	s.b.Read(func(t *datatree.Tree) {
		last = int64(t.LastZxid())
		_, known = t.Session(req.SessionID)
	})
	if req.LastZxidSeen > last {
		// ZooKeeper closes without an answer: the client must try a server that is
		// not behind what it has already seen.
		return nil, fmt.Errorf("client has seen zxid 0x%x, ours is 0x%x", req.LastZxidSeen, last)
	}
	timeout := s.clampTimeout(req.TimeOut)
	resp := zkproto.ConnectResponse{TimeOut: int32(timeout / time.Millisecond), HasReadOnly: req.HasReadOnly}
	if req.SessionID == 0 {
		s.mu.Lock()
		id := s.ids.nextID()
		s.mu.Unlock()
		txn := datatree.Txn{Session: id, Op: datatree.CreateSession(resp.TimeOut)}
		select {
		case out := <-s.b.Submit(txn):
			if out.Err != nil {
				return nil, fmt.Errorf("createSession: %w", out.Err)
			}
			if out.Result.Err != datatree.Ok {
				return nil, fmt.Errorf("createSession: %w", out.Result.Err)
			}
		case <-time.After(s.cfg.HandshakeTimeout):
			return nil, errors.New("createSession did not commit in time")
		}
		resp.SessionID = id
		log.Debug("session created", "session", fmt.Sprintf("0x%x", id), "timeout", timeout)
	} else {
		if !known && checkPassword(s.cfg.Secret, req.SessionID, req.Passwd) {
			// This replica may lag the one that created the session: catch up with
			// the leader before calling it expired (ZooKeeper asks the leader).
			select {
			case err := <-s.b.Sync():
				if err != nil {
					return nil, fmt.Errorf("sync before revalidating a session: %w", err)
				}
			case <-time.After(s.cfg.HandshakeTimeout):
				return nil, errors.New("sync before revalidating a session timed out")
			}
			s.b.Read(func(t *datatree.Tree) { _, known = t.Session(req.SessionID) })
		}
		if !known || !checkPassword(s.cfg.Secret, req.SessionID, req.Passwd) {
			log.Info("reconnect refused: session expired or bad password", "session", fmt.Sprintf("0x%x", req.SessionID))
			exp := zkproto.ExpiredConnectResponse(req)
			nc.Write(zkproto.AppendFrame(nil, zkproto.Marshal(&exp)))
			s.sent.Add(1)
			return nil, nil
		}
		resp.SessionID = req.SessionID
		s.b.Touch(req.SessionID)
	}
	resp.Passwd = sessionPassword(s.cfg.Secret, resp.SessionID)
	c := newConn(s, nc, resp.SessionID, timeout)
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return nil, errors.New("server stopping")
	}
	old := s.bySession[c.sid]
	s.bySession[c.sid] = c
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	if old != nil {
		old.kill() // the client moved to a new connection; the old one is stale
	}
	c.send(zkproto.AppendFrame(nil, zkproto.Marshal(&resp)))
	return c, nil
}

// unregister forgets a closed connection and its watches.
func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.bySession[c.sid] == c {
		delete(s.bySession, c.sid)
	}
	s.mu.Unlock()
	s.watches.removeConn(c)
}
