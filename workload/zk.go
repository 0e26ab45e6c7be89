package workload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/workload/client"
)

// ZooKeeper is the ZooKeeper client protocol (poled and ZooKeeper): sessions through
// go-zookeeper, each pinned to its server, writes as Sets of znodes.
var ZooKeeper Protocol = zkProtocol{}

type zkProtocol struct{}

// zkConn is one server's sessions.
type zkConn struct {
	log      *slog.Logger
	ready    atomic.Int32 // sessions that have a ZooKeeper session right now
	sessions []*session
	rr       atomic.Uint32
	closing  atomic.Bool // Close was called: stop redialing
}

type session struct {
	c     *zkConn
	conn  *zk.Conn
	ready atomic.Bool
}

func (zkProtocol) Dial(cfg Config, s Server, gone func() bool) (Conn, error) {
	c := &zkConn{log: cfg.Log.With("server", s.ID)}
	for range cfg.SessionsPerServer {
		sess := &session{c: c}
		conn, _, err := zk.Connect([]string{s.Addr}, cfg.SessionTimeout,
			zk.WithHostProvider(&pinnedHost{addr: s.Addr, gone: func() bool { return gone() || c.closing.Load() }}),
			zk.WithLogger(zkLogger{c.log}), zk.WithLogInfo(false), zk.WithDialer(bufferedDial),
			zk.WithEventCallback(sess.onEvent),
			zk.WithMaxConnBufferSize(max(64<<10, 2*cfg.PayloadBytes+4096)))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("workload: session to server %d (%s): %w", s.ID, s.Addr, err)
		}
		sess.conn = conn
		c.sessions = append(c.sessions, sess)
	}
	return c, nil
}

func (c *zkConn) Ready() (ready, of int) { return int(c.ready.Load()), len(c.sessions) }
func (c *zkConn) Usable() bool           { return c.ready.Load() > 0 }

// onEvent tracks whether the session can take requests. It runs on the client's own
// goroutine and must not block.
func (s *session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	ready := ev.State == zk.StateHasSession
	if s.ready.Swap(ready) == ready {
		return
	}
	if ready {
		if s.c.ready.Add(1) == 1 {
			s.c.log.Info("server available")
		}
	} else if s.c.ready.Add(-1) == 0 {
		s.c.log.Info("server unavailable", "state", ev.State.String())
	}
}

func (c *zkConn) readySession() *session {
	n := uint32(len(c.sessions))
	start := c.rr.Add(1)
	for i := range n {
		if sess := c.sessions[(start+i)%n]; sess.ready.Load() {
			return sess
		}
	}
	return nil
}

// Put sets key through one of the ready sessions (zk.Conn takes no context: Close
// returns what is in flight).
func (c *zkConn) Put(_ context.Context, key string, value []byte, sending func()) (Written, client.Reply, string) {
	sess := c.readySession()
	if sess == nil {
		return Written{}, client.Unavailable, ""
	}
	sending()
	stat, err := sess.conn.Set(key, value, -1)
	if err != nil {
		return Written{}, classify(err), err.Error()
	}
	return Written{Zxid: stat.Mzxid, Version: stat.Version}, client.Acked, ""
}

func (c *zkConn) Close() {
	c.closing.Store(true)
	var wg sync.WaitGroup
	for _, sess := range c.sessions {
		wg.Go(sess.conn.Close)
	}
	wg.Wait()
}

// CreateKeys creates the keyspace through a ready session. A connection lost meanwhile
// (the server looked for a leader: poled closes its clients' connections then) is
// retried on the next ready session, for up to createKeysFor: creating is idempotent.
func (zkProtocol) CreateKeys(ctx context.Context, cfg Config, conns []Conn) error {
	deadline := time.Now().Add(createKeysFor)
	for try := 0; ; try++ {
		var conn *zk.Conn
		for i := range conns {
			if sess := conns[(try+i)%len(conns)].(*zkConn).readySession(); sess != nil {
				conn = sess.conn
				break
			}
		}
		var err error
		if conn == nil {
			err = errNoSession
		} else if err = createKeysOn(ctx, cfg, conn); err == nil || !retryableCreate(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workload: creating keys for %v: %w", createKeysFor, err)
		}
		cfg.Log.Warn("creating keys again", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("workload: creating keys: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// createKeysFor bounds how long Prepare retries creating the keyspace: a leader
// elected anew meanwhile (the run's schedule may start early) loses the writes.
const createKeysFor = 20 * time.Second

var errNoSession = errors.New("workload: creating keys: no server available")

// retryableCreate: the session's connection went away, not the request.
func retryableCreate(err error) bool {
	return errors.Is(err, errNoSession) || errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

func createKeysOn(ctx context.Context, cfg Config, conn *zk.Conn) error {
	parts := strings.Split(cfg.Prefix, "/")[1:]
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("workload: creating %s: %w", p, err)
		}
	}
	init := encodeValue(cfg.RunID, 0, cfg.PayloadBytes)
	return PutKeys(ctx, cfg, func(k string) error {
		_, err := conn.Create(k, init, 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(k, init, -1)
		}
		return err
	})
}

func (zkProtocol) Verify(ctx context.Context, cfg VerifyConfig, recs []Record) (*Verification, error) {
	return Verify(ctx, cfg, recs)
}

// classify maps a ZooKeeper client's error to the client core's reply.
func classify(err error) client.Reply {
	switch {
	case err == nil:
		return client.Acked
	case errors.Is(err, zk.ErrNoServer): // flushed from the send queue while disconnected
		return client.NotSent
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrClosing),
		errors.Is(err, zk.ErrSessionExpired):
		return client.Lost // the client flushes requests in flight with these
	}
	for _, e := range serverErrors {
		if errors.Is(err, e) {
			return client.Refused // the server answered: the write did not happen
		}
	}
	return client.Lost // I/O errors: the request may have left
}

var serverErrors = []error{zk.ErrNoNode, zk.ErrNoAuth, zk.ErrBadVersion, zk.ErrNoChildrenForEphemerals,
	zk.ErrNodeExists, zk.ErrNotEmpty, zk.ErrInvalidACL, zk.ErrAuthFailed, zk.ErrAPIError,
	zk.ErrSessionMoved, zk.ErrBadArguments, zk.ErrInvalidPath, zk.ErrUnknown}

// pinnedHost is a zk.HostProvider that only ever returns one server: a session never
// wanders to another server, so each request reaches the server the workload chose.
type pinnedHost struct {
	addr  string
	gone  func() bool // the server was killed, or the session is closing
	fails int         // Next calls since the last successful connection
}

func (p *pinnedHost) Init([]string) error { return nil }
func (p *pinnedHost) Len() int            { return 1 }
func (p *pinnedHost) Connected()          { p.fails = 0 }

// Next redials as client.Redial says. Once the server is gone (killed, or the session
// closing) it reports retryStart, on which the client fails its unsent requests
// (ErrNoServer, so they move to another server of the DC), notices Close, and waits a
// second before the next attempt.
func (p *pinnedHost) Next() (string, bool) {
	p.fails++
	wait, giveUp := client.Redial(p.fails, p.fails > 1 && p.gone())
	time.Sleep(wait)
	return p.addr, giveUp
}

// bufferedDial dials a server through a read buffer: the client reads each reply's
// length and body in two reads, which the buffer serves from one system call, and
// several replies that arrived together from one.
func bufferedDial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, a ...any) { l.log.Debug("zk: " + fmt.Sprintf(format, a...)) }
