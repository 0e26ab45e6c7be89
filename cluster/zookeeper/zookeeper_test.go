package zookeeper

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	_ "github.com/polebench/polebench/cluster/local"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/netem"
)

// require fails under CI when ZooKeeper cannot run, and skips otherwise.
func require(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real ZooKeeper needed under CI: %v", err)
		}
		t.Skip(err)
	}
}

func syncConn(c *zk.Conn, path string) error {
	_, err := c.Sync(path)
	return err
}

// TestZooKeeperFlavorFailover: the two-DC spec's five servers as Apache ZooKeeper JVMs
// on loopback behind user-space links. p5 (the highest id) leads first; after it is
// killed the survivors elect one of theirs; the timelines read off the logs have the
// new leader's LEADING after the kill and its FIRST_COMMIT after that, and the
// proxies measured at least the two-DC RTT; a restarted p5 follows and serves the data.
// The cluster comes up after a short warm-up that wrote through every server and left
// no znode behind. It starts through cluster.New, on the local backend, which package
// local registers: the flavor's registration adds it there.
func TestZooKeeperFlavorFailover(t *testing.T) {
	require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topo := clustertest.TwoDC(t)
	c, err := cluster.New(ctx, backend.Local, cluster.Options{Topology: topo, Flavor: cluster.ZooKeeper, InitialLeader: 5,
		Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), DataRoot: t.TempDir(), WarmUp: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	z := c.(*Cluster)
	if got := c.Links(); got != cluster.LinksUserSpace {
		t.Errorf("links %q, want %q", got, cluster.LinksUserSpace)
	}
	leader, err := cluster.WaitLeader(ctx, c.Servers(), c.Alive)
	if err != nil {
		t.Fatal(err)
	}
	if leader != 5 {
		t.Fatalf("first leader p%d, want p5", leader)
	}
	if err := cluster.WaitServing(ctx, c.Servers(), c.Alive); err != nil {
		t.Fatal(err)
	}
	conn := clustertest.Connect(t, c.Servers()[0].Client) // p1, in D1: writes cross the link
	if err := syncConn(conn, "/"); err != nil {
		t.Fatal(err)
	}
	kids, root, err := conn.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	// Every warm-up writer created its ephemeral znode under /, a change to /'s children.
	if writers := int32(len(topo.Servers()) * warmSessions * warmWriters); root.Cversion < writers {
		t.Errorf("/ has cversion %d after the warm-up, want at least %d (one per writer's znode)", root.Cversion, writers)
	}
	for _, k := range kids {
		if strings.HasPrefix(k, "polebench-warmup") {
			t.Errorf("the warm-up left /%s behind", k)
		}
	}
	if _, err := conn.Create("/k", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	kill := time.Now()
	if err := c.Kill(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if c.Alive(5) {
		t.Fatal("p5 alive after Kill")
	}
	leader, err = cluster.WaitLeader(ctx, c.Servers(), c.Alive)
	if err != nil {
		t.Fatal(err)
	}
	// Which one: FastLeaderElection elects a server as up to date as any, and among
	// equals the highest id only if its votes arrive in time, which across the emulated
	// WAN they do not always (a CI rehearsal elected p3; runner.TestZooKeeperFlavor saw it too).
	// What a quorum acknowledged survives either way: the restarted p5 reads it below.
	if leader == 5 || leader < 1 {
		t.Fatalf("leader after the kill p%d", leader)
	}
	t.Logf("leader after the kill: p%d", leader)
	connL := clustertest.Connect(t, c.Servers()[leader-1].Client)
	if _, err := connL.Set("/k", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	var leading, first time.Time
	deadline := time.Now().Add(10 * time.Second)
	for first.IsZero() && time.Now().Before(deadline) {
		for _, e := range z.Timeline(leader) {
			switch {
			case e.Kind == event.Leading && e.Time().After(kill):
				leading = e.Time()
			case e.Kind == event.FirstCommit && e.Time().After(kill):
				first = e.Time()
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if leading.IsZero() || first.IsZero() || first.Before(leading) {
		t.Fatalf("p%d's timeline after the kill: LEADING %v, FIRST_COMMIT %v; events %+v", leader, leading, first, z.Timeline(leader))
	}
	t.Logf("election %v (kill to LEADING), recovery %v (LEADING to first commit)", leading.Sub(kill), first.Sub(leading))
	// D1 to D2 is 20.75 ms in the plan: no link delivers before its delay (a loaded
	// machine only adds to it, so there is no upper bound here). Which D2 servers p1
	// exchanged messages with depends on who leads: every one it measured counts.
	rtts := z.MeasuredRTTs()
	p1, _ := rtts["p1"].(map[string]float64)
	across := 0
	for _, peer := range []string{"p3", "p4", "p5"} {
		if r, ok := p1[peer]; ok {
			across++
			if r < 19 {
				t.Errorf("measured RTT p1-%s %v ms, want at least about 20.75", peer, r)
			}
		}
	}
	if across == 0 {
		t.Errorf("p1 measured no RTT to D2; all %v", rtts)
	}
	t.Logf("measured RTTs (ms): %v", rtts)
	if err := c.Restart(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitServing(ctx, c.Servers(), c.Alive); err != nil {
		t.Fatal(err)
	}
	conn5 := clustertest.Connect(t, c.Servers()[4].Client)
	if err := syncConn(conn5, "/k"); err != nil {
		t.Fatal(err)
	}
	if b, _, err := conn5.Get("/k"); err != nil || string(b) != "v2" {
		t.Fatalf("restarted p5 reads %q, %v; want v2", b, err)
	}
	if mode, err := cluster.Mode(ctx, c.Servers()[4]); err != nil || mode != "follower" {
		t.Errorf("restarted p5: mode %q, %v", mode, err)
	}
}
