// Package zktest runs real Apache ZooKeeper (Debian's zookeeper package) on loopback for
// tests: a standalone server or a small ensemble in a temporary directory, started with
// java and the package's classpath, probed with the four-letter words.
package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polebench/polebench/freeport"
)

// Jar is the ZooKeeper server jar of Debian's libzookeeper-java (pulled in by zookeeper);
// its manifest's Class-Path names every dependency.
const Jar = "/usr/share/java/zookeeper.jar"

// logJar gives the server's slf4j a console binding, so server.log says something.
const logJar = "/usr/share/java/slf4j-simple.jar"

// Available returns nil if real ZooKeeper can run here, else why not.
func Available() error {
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java not found: install the Debian package zookeeper (it pulls in default-jre)")
	}
	if _, err := os.Stat(Jar); err != nil {
		return fmt.Errorf("%s missing: install the Debian package zookeeper", Jar)
	}
	return nil
}

// Require fails the test when CI is set and ZooKeeper cannot run, and skips it otherwise.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real ZooKeeper needed under CI: %v", err)
		}
		t.Skipf("skipping, real ZooKeeper unavailable: %v", err)
	}
}

// Options configures a cluster.
type Options struct {
	Dir       string        // parent of every server's directory; required
	TickTime  time.Duration // ZooKeeper's tick; default 500 ms
	ForceSync bool          // fsync the transaction log before acknowledging
	HeapMB    int           // -Xmx per JVM; default 256
	Log       *slog.Logger  // default discards
}

// Server is one ZooKeeper process.
type Server struct {
	ID         int
	ClientAddr string // 127.0.0.1:port
	Dir        string // holds zoo.cfg, server.log and data/

	peerPort, electionPort int
	cmd                    *exec.Cmd
	exited                 chan struct{}
}

// Cluster is a standalone server (one) or an ensemble (several). Its methods may be
// called from several goroutines.
type Cluster struct {
	Servers []*Server
	opts    Options
	log     *slog.Logger
	mu      sync.Mutex // guards each Server's cmd
}

// Start starts n servers (n == 1: standalone) and waits until each one serves.
func Start(ctx context.Context, n int, o Options) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if n < 1 || o.Dir == "" {
		return nil, fmt.Errorf("zktest: need n >= 1 (got %d) and a directory", n)
	}
	if o.TickTime <= 0 {
		o.TickTime = 500 * time.Millisecond
	}
	if o.HeapMB <= 0 {
		o.HeapMB = 256
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ports, err := freeport.Loopback(3 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, log: log}
	for i := 0; i < n; i++ {
		s := &Server{
			ID:           i + 1,
			ClientAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*i])),
			Dir:          filepath.Join(o.Dir, fmt.Sprintf("zk%d", i+1)),
			peerPort:     ports[3*i+1],
			electionPort: ports[3*i+2],
		}
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		if err := c.writeConfig(s); err != nil {
			return nil, err
		}
	}
	for _, s := range c.Servers {
		if err := c.spawn(s); err != nil {
			c.Close()
			return nil, err
		}
	}
	for _, s := range c.Servers {
		if _, err := WaitServing(ctx, s.ClientAddr); err != nil {
			c.Close()
			return nil, fmt.Errorf("zktest: server %d: %w (see %s)", s.ID, err, filepath.Join(s.Dir, "server.log"))
		}
	}
	return c, nil
}

// StartT starts a cluster for a test (Require first), closed when the test ends.
func StartT(t testing.TB, n int, forceSync bool) *Cluster {
	t.Helper()
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, n, Options{Dir: t.TempDir(), ForceSync: forceSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (c *Cluster) writeConfig(s *Server) error {
	data := filepath.Join(s.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	sync := "no"
	if c.opts.ForceSync {
		sync = "yes"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=10\nsyncLimit=5\n", c.opts.TickTime.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n", data, portOf(s.ClientAddr))
	fmt.Fprintf(&b, "admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\nforceSync=%s\n", sync)
	if len(c.Servers) > 1 {
		for _, p := range c.Servers {
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", p.ID, p.peerPort, p.electionPort)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zktest: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	return nil
}

func (c *Cluster) spawn(s *Server) error {
	cp := Jar
	if _, err := os.Stat(logJar); err == nil {
		cp += ":" + logJar
	}
	logf, err := os.OpenFile(filepath.Join(s.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	cmd := exec.Command("java",
		fmt.Sprintf("-Xmx%dm", c.opts.HeapMB), "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(s.Dir, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Never outlive the test binary, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("zktest: starting server %d: %w", s.ID, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	c.log.Info("zookeeper started", "server", s.ID, "addr", s.ClientAddr, "pid", cmd.Process.Pid)
	return nil
}

// Server returns server id (1-based).
func (c *Cluster) Server(id int) *Server { return c.Servers[id-1] }

// Addrs returns every server's client address, in id order.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.ClientAddr)
	}
	return out
}

// Kill sends SIGKILL to server id and waits until it is gone.
func (c *Cluster) Kill(id int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.Server(id)
	if s.cmd == nil {
		return fmt.Errorf("zktest: server %d not running", id)
	}
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
	c.log.Info("zookeeper killed", "server", id)
	return nil
}

// Restart starts a killed server again on its data directory and waits until it serves.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	c.mu.Lock()
	s := c.Server(id)
	if s.cmd != nil {
		c.mu.Unlock()
		return fmt.Errorf("zktest: server %d still running", id)
	}
	err := c.spawn(s)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := WaitServing(ctx, s.ClientAddr); err != nil {
		return fmt.Errorf("zktest: server %d: %w", id, err)
	}
	return nil
}

// Leader returns the id of the server whose srvr says "Mode: leader" (or the standalone one).
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for _, s := range c.Servers {
		c.mu.Lock()
		running := s.cmd != nil
		c.mu.Unlock()
		if !running {
			continue
		}
		mode, err := Mode(ctx, s.ClientAddr)
		if err == nil && (mode == "leader" || mode == "standalone") {
			return s.ID, nil
		}
	}
	return 0, errors.New("zktest: no leader")
}

// Close kills every server that still runs.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		c.Kill(s.ID) // an error only says it was not running
	}
}

// FourLetter sends a four-letter word ("ruok", "srvr", "mntr") and returns the answer.
func FourLetter(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// Mode returns the "Mode:" line of srvr (leader, follower, standalone), or an error when
// the server does not serve.
func Mode(ctx context.Context, addr string) (string, error) {
	out, err := FourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("not serving: %q", strings.TrimSpace(out))
}

// WaitServing polls srvr until the server serves (ruok answers imok before it does).
func WaitServing(ctx context.Context, addr string) (string, error) {
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		mode, err := Mode(pctx, addr)
		cancel()
		if err == nil {
			return mode, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s to serve: %w (last: %v)", addr, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
