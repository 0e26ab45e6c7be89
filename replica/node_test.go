package replica

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/zab"
)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// ensemble reserves ports for n servers and returns their configs.
func ensemble(t testing.TB, n int) ([]Config, []Listeners) {
	t.Helper()
	var peers []Peer
	var lns []Listeners
	for id := 1; id <= n; id++ {
		var ls [4]net.Listener
		for i := range ls {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ls[i] = l
		}
		p := func(i int) int { return ls[i].Addr().(*net.TCPAddr).Port }
		peers = append(peers, Peer{ID: id, Host: "127.0.0.1", ClientPort: p(0), PeerPort: p(1), ElectionPort: p(2), AdminPort: p(3)})
		lns = append(lns, Listeners{Client: ls[0], Peer: ls[1], Election: ls[2], Admin: ls[3]})
	}
	root := t.TempDir()
	var cfgs []Config
	for id := 1; id <= n; id++ {
		cfgs = append(cfgs, Config{ID: id, Servers: peers, DataDir: filepath.Join(root, fmt.Sprintf("p%d", id)),
			Oracle: score.Oracle{Name: score.History}, InitialLeader: n})
	}
	return cfgs, lns
}

func waitServing(t testing.TB, n *Node) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !n.Status().Serving {
		if time.Now().After(deadline) {
			t.Fatalf("p%d not serving after 30s: %+v", n.cfg.ID, n.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRestartFromFiles: a 3-node ensemble commits writes; every node is stopped
// (as a kill would) and started again from its data directory only; the writes are
// all there, with the same versions, and the log files hold them.
func TestRestartFromFiles(t *testing.T) {
	cfgs, lns := ensemble(t, 3)
	ctx := context.Background()
	nodes := make([]*Node, 3)
	for i, c := range cfgs {
		n, err := Start(ctx, c, lns[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	for _, n := range nodes {
		waitServing(t, n)
	}
	if st := nodes[2].Status(); st.Role != zab.Leading.String() {
		t.Fatalf("p3 (initial leader) is %s", st.Role)
	}
	c, _, err := zk.Connect([]string{cfgs[0].Self().ClientAddr()}, 5*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	const writes = 200
	for i := 0; i < writes; i++ {
		if _, err := c.Create(fmt.Sprintf("/n%03d", i), []byte(fmt.Sprint(i)), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Set("/n007", []byte("seven"), 0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, n := range nodes {
		n.Stop()
	}
	for _, cfg := range cfgs {
		segs, _ := filepath.Glob(filepath.Join(cfg.DataDir, "log", "*"))
		var size int64
		for _, s := range segs {
			if fi, err := os.Stat(s); err == nil {
				size += fi.Size()
			}
		}
		if size < writes*10 {
			t.Fatalf("p%d's log holds %d bytes in %v after %d writes", cfg.ID, size, segs, writes)
		}
	}
	for i, cfg := range cfgs {
		n, err := Start(ctx, cfg, Listeners{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		defer n.Stop()
	}
	for _, n := range nodes {
		waitServing(t, n)
	}
	for _, cfg := range cfgs {
		c, _, err := zk.Connect([]string{cfg.Self().ClientAddr()}, 5*time.Second, zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		kids, _, err := c.Children("/")
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) != writes+1 { // and /zookeeper
			t.Fatalf("p%d has %d children of /, want %d", cfg.ID, len(kids), writes+1)
		}
		v, st, err := c.Get("/n007")
		if err != nil || string(v) != "seven" || st.Version != 1 {
			t.Fatalf("p%d: /n007 = %q version %d, %v", cfg.ID, v, st.Version, err)
		}
		c.Close()
	}
}
