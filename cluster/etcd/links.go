package etcd

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/polebench/polebench/cluster/internal/proxyset"
	"github.com/polebench/polebench/netem"
)

// links are etcd's user-space links. Every member dials member i at the one peer URL
// i advertises (the cluster's membership has one set of URLs per member, the same for
// all), so unlike ZooKeeper's zoo.cfg the URL cannot name the pair. Instead i's URL
// is a front listener that tells who dialed (sender: on loopback, the process that
// owns the connection's other end) and hands the connection to the netem.Proxy of
// that ordered pair, which holds each direction on the plan's DelayLine for it.
type links struct {
	fronts  []net.Listener
	proxies proxyset.Set
	queues  map[pair]*queue
	wg      sync.WaitGroup // the fronts' accept loops
	hands   sync.WaitGroup // connections on their way to their proxy
}

// pair is the link from server From to server To.
type pair struct{ From, To int }

// sender says which server dialed the connection c (0: none it knows).
type sender func(c net.Conn) int

// newLinks starts a front listener per member on host and a proxy per ordered pair,
// and points every member's advertised peer URL at its front.
func newLinks(c *Cluster, plan netem.Plan, host string, who sender) (_ *links, err error) {
	l := &links{queues: map[pair]*queue{}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	ids := c.ids()
	for _, to := range ids {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("etcd: link listener: %w", err)
		}
		l.fronts = append(l.fronts, ln)
		for _, from := range ids {
			if from == to {
				continue
			}
			k := pair{from, to}
			q := newQueue(ln.Addr())
			l.queues[k] = q
			l.proxies.Add(from, to, netem.NewProxy(q, netem.ProxyConfig{
				Target: c.members[to].peer,
				Out:    func() (*netem.DelayLine, error) { return plan.DelayLine(k.From, k.To) },
				Back:   func() (*netem.DelayLine, error) { return plan.DelayLine(k.To, k.From) },
				Logger: c.log.With("link", fmt.Sprintf("p%d->p%d", from, to)),
			}))
		}
		c.members[to].adv = ln.Addr().String()
		l.wg.Go(func() { l.route(ln, to, who, c) })
	}
	return l, nil
}

// route hands each connection accepted for server to to its sender's proxy, each on
// its own goroutine: finding the sender reads /proc (tens of ms on a loaded host, one
// scan of every TCP socket), and a front that placed one connection at a time left the
// next ones in its backlog until their dialers gave up (etcd's peer dial timeout is
// 1 s plus the election timeout), which a burst of redials after a restart makes likely.
func (l *links) route(ln net.Listener, to int, who sender, c *Cluster) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		l.hands.Go(func() { l.hand(conn, to, who, c) })
	}
}

// hand gives conn to its sender's proxy; one from a process it cannot place is closed
// (every member is one of the cluster's; a dialer that gave up leaves no socket).
func (l *links) hand(conn net.Conn, to int, who sender, c *Cluster) {
	from := who(conn)
	q := l.queues[pair{from, to}]
	if q == nil {
		c.log.Warn("etcd: peer connection from no member: closed", "to", to, "remote", conn.RemoteAddr().String())
		conn.Close()
		return
	}
	q.push(conn)
}

func (l *links) close() {
	for _, ln := range l.fronts {
		ln.Close()
	}
	l.wg.Wait()
	l.proxies.Close()
	for _, q := range l.queues { // a hand still pushing
		q.Close()
	}
	l.hands.Wait()
}

// queue is a net.Listener whose connections were accepted elsewhere (by a front).
type queue struct {
	addr   net.Addr
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

func newQueue(addr net.Addr) *queue {
	return &queue{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (q *queue) push(c net.Conn) {
	select {
	case q.conns <- c:
	case <-q.closed:
		c.Close()
	}
}

func (q *queue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.closed:
		return nil, net.ErrClosed
	}
}

func (q *queue) Close() error {
	q.once.Do(func() { close(q.closed) })
	return nil
}

func (q *queue) Addr() net.Addr { return q.addr }

// senderByPid finds the member whose process owns the other end of a loopback
// connection: the socket bound to the connection's remote port (/proc/net/tcp), then
// the member process holding it (/proc/PID/fd).
func (c *Cluster) senderByPid(conn net.Conn) int {
	remote, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err != nil {
		return 0
	}
	local, err := netip.ParseAddrPort(conn.LocalAddr().String())
	if err != nil {
		return 0
	}
	inode, err := socketInode(remote, local)
	if err != nil {
		c.log.Debug("etcd: peer connection's socket", "remote", remote.String(), "err", err)
		return 0
	}
	want := "socket:[" + inode + "]"
	for _, id := range c.ids() {
		pid := c.procs.Pid(id)
		if pid == 0 {
			continue
		}
		if holds(pid, want) {
			return id
		}
	}
	return 0
}

// socketInode is the inode of the IPv4 TCP socket from local to remote, as
// /proc/net/tcp lists it (addresses in hex, little-endian on x86, as the kernel
// prints them: compared as the kernel's own formatting of ours).
func socketInode(local, remote netip.AddrPort) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	want := procAddr(local) + " " + procAddr(remote)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && fields[1]+" "+fields[2] == want {
			return fields[9], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no such socket in /proc/net/tcp")
}

// procAddr formats an IPv4 address and port as /proc/net/tcp does: the address as
// the host's 32-bit integer in hex (little-endian bytes reversed), the port in hex.
func procAddr(a netip.AddrPort) string {
	b := a.Addr().As4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], a.Port())
}

// holds says whether process pid has a file descriptor on target.
func holds(pid int, target string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == target {
			return true
		}
	}
	return false
}
