package local

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/score"
)

// zkCluster is a 5-server poled ensemble (no emulated delay) and a client per server.
func zkCluster(t *testing.T) (*Cluster, map[int]*zk.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(ctx, cluster.Options{Topology: clustertest.TwoDC(t), Oracle: score.Oracle{Name: score.History}, InitialLeader: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if _, err := cluster.WaitLeader(ctx, c.Servers(), nil); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitServing(ctx, c.Servers(), nil); err != nil {
		t.Fatal(err)
	}
	conns := map[int]*zk.Conn{}
	for _, s := range c.Servers() {
		conns[s.ID] = clustertest.Connect(t, s.Client)
	}
	return c, conns
}

var acl = zk.WorldACL(zk.PermAll)

// TestReplicatedZooKeeperOps: the real go-zookeeper client against a 5-node poled
// ensemble, writing through followers and the leader and reading elsewhere.
func TestReplicatedZooKeeperOps(t *testing.T) {
	_, zc := zkCluster(t)
	p1, p3, p5 := zc[1], zc[3], zc[5] // followers in D1 and D2, the leader

	// Versions and their errors.
	if _, err := p1.Create("/v", []byte("a"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := p3.Create("/v", nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create twice: %v", err)
	}
	st, err := p3.Set("/v", []byte("b"), 0)
	if err != nil || st.Version != 1 {
		t.Fatalf("set: %+v %v", st, err)
	}
	if _, err := p5.Set("/v", []byte("c"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale version: %v", err)
	}
	if err := p1.Delete("/v", 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete with a stale version: %v", err)
	}
	if _, err := p1.Sync("/v"); err != nil {
		t.Fatal(err)
	}
	if v, st, err := p1.Get("/v"); err != nil || string(v) != "b" || st.Version != 1 {
		t.Fatalf("read through p1 after sync: %q %+v %v", v, st, err)
	}

	// Sequential names, created through different servers, one counter.
	var names []string
	for _, c := range []*zk.Conn{p1, p3, p5, p1} {
		name, err := c.Create("/v/s-", nil, zk.FlagSequence, acl)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	for i, want := range []string{"/v/s-0000000000", "/v/s-0000000001", "/v/s-0000000002", "/v/s-0000000003"} {
		if names[i] != want {
			t.Fatalf("sequential names %v", names)
		}
	}
	if err := p1.Delete("/v", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete a parent: %v", err)
	}

	// Watches set on a follower fire once, for a change made through another server.
	_, _, dataW, err := p3.GetW("/v")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childW, err := p1.ChildrenW("/v")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p5.Set("/v", []byte("d"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := p5.Create("/v/kid", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]<-chan zk.Event{"data": dataW, "child": childW} {
		select {
		case ev := <-w:
			if ev.Path != "/v" {
				t.Fatalf("%s watch: %+v", name, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s watch did not fire", name)
		}
		select {
		case ev, ok := <-w:
			if ok {
				t.Fatalf("%s watch fired twice: %+v", name, ev)
			}
		default:
		}
	}

	// Multi: all or nothing, with the failing op named.
	_, err = p3.Multi(&zk.CreateRequest{Path: "/m1", Acl: acl}, &zk.SetDataRequest{Path: "/v", Data: []byte("x"), Version: 99})
	if !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("multi with a bad version: %v", err)
	}
	if ok, _, _ := p5.Exists("/m1"); ok {
		t.Fatal("a failed multi created /m1")
	}
	if _, err := p3.Multi(&zk.CreateRequest{Path: "/m1", Acl: acl}, &zk.SetDataRequest{Path: "/v", Data: []byte("x"), Version: -1}); err != nil {
		t.Fatal(err)
	}
	p5.Sync("/m1")
	if ok, _, _ := p5.Exists("/m1"); !ok {
		t.Fatal("a committed multi's create is missing on the leader")
	}
}

// TestReplicatedSessionExpiry: an ephemeral created through a follower vanishes on
// every server once its session expires; the leader expires it, from the touches the
// follower forwarded while the client lived.
func TestReplicatedSessionExpiry(t *testing.T) {
	c, zc := zkCluster(t)
	s2 := c.Servers()[1]
	dialer := &cuttableDialer{}
	eph, _, err := zk.Connect([]string{s2.Client}, 4*time.Second, zk.WithLogger(clustertest.Quiet{}), zk.WithDialer(dialer.dial))
	if err != nil {
		t.Fatal(err)
	}
	defer eph.Close()
	if _, err := eph.Create("/eph", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	// Another session may read from before the create (ZooKeeper's reads are not
	// linearizable; a CI run read p5 before it applied the commit): sync it first.
	if _, err := zc[4].Sync("/eph"); err != nil {
		t.Fatal(err)
	}
	// Alive well past its 4 s timeout: the follower's touches reach the leader. The
	// ephemeral is checked all along, so a lapse fails at once.
	for until := time.Now().Add(6 * time.Second); time.Now().Before(until); time.Sleep(200 * time.Millisecond) {
		if ok, _, _ := zc[4].Exists("/eph"); !ok {
			t.Fatal("a live session's ephemeral vanished: touches did not reach the leader")
		}
	}
	dialer.cut() // the client goes silent without closing its session
	deadline := time.Now().Add(20 * time.Second)
	for {
		gone := 0
		for _, conn := range zc {
			if ok, _, err := conn.Exists("/eph"); err == nil && !ok {
				gone++
			}
		}
		if gone == len(zc) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ephemeral still on %d of %d servers 20 s after its session went silent", len(zc)-gone, len(zc))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cuttableDialer lets a test silence a client without closing its session: cut
// drops its connection and refuses every later dial.
type cuttableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	down  bool
}

func (d *cuttableDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errors.New("cut")
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttableDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = true
	for _, c := range d.conns {
		c.Close()
	}
}

// TestZkCliAgainstEnsemble: the official Java client creates, reads, updates and
// deletes znodes through a follower of the replicated ensemble.
func TestZkCliAgainstEnsemble(t *testing.T) {
	cli := "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(cli); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("zkCli.sh not found: CI must install the Debian package zookeeper")
		}
		t.Skip("zkCli.sh not found: install the Debian package zookeeper")
	}
	c, zc := zkCluster(t)
	addr := c.Servers()[0].Client // p1, a follower in the other DC
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "-server", addr)
	cmd.Stdin = strings.NewReader("create /cli hello\nget /cli\nset /cli world\nget /cli\ncreate /gone x\ndelete /gone\nls /\nquit\n")
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-Xshare:auto -XX:TieredStopAtLevel=1")
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		t.Fatalf("zkCli.sh: %v\n%s", err, out)
	}
	text := string(out)
	t.Logf("zkCli.sh against p1:\n%s", text)
	for _, want := range []string{"Created /cli", "hello", "world", "Created /gone"} {
		if !strings.Contains(text, want) {
			t.Fatalf("zkCli output lacks %q:\n%s", want, text)
		}
	}
	zc[5].Sync("/cli")
	if v, _, err := zc[5].Get("/cli"); err != nil || string(v) != "world" {
		t.Fatalf("the leader reads /cli = %q, %v", v, err)
	}
	if ok, _, _ := zc[5].Exists("/gone"); ok {
		t.Fatal("zkCli's delete did not replicate")
	}
}
