package etcd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	_ "github.com/polebench/polebench/cluster/local"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/netem"
)

// require fails under CI when etcd cannot run, and skips otherwise.
func require(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real etcd needed under CI: %v", err)
		}
		t.Skip(err)
	}
}

func put(t *testing.T, addr, key, val string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, val); err != nil {
		t.Fatalf("put %s through %s: %v", key, addr, err)
	}
}

func get(t *testing.T, addr, key string) string {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get %s through %s: %v (%d kvs)", key, addr, err, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// TestEtcdFlavorFailover: the two-DC spec's five servers as etcd processes on loopback
// behind user-space links. The spec's initial leader p5 leads (moved there); after it
// is killed a survivor leads whose log is as up to date as any survivor's (Raft's
// vote rule: its ELECTION's (term, index) is no older than any other survivor's last
// one); its timeline has LEADING after the kill and FIRST_COMMIT after that; the links
// measured the plan's RTT across the DCs at least; a restarted p5 follows and reads
// what was written meanwhile; Close leaves no process and no data on tmpfs.
func TestEtcdFlavorFailover(t *testing.T) {
	require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topo := clustertest.TwoDC(t)
	label := clustertest.Label(t)
	c, err := cluster.New(ctx, backend.Local, cluster.Options{Topology: topo, Flavor: Flavor, InitialLeader: 5, Label: label,
		Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), DataRoot: t.TempDir(), Logger: clustertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close(context.Background())
		}
	}()
	e := c.(*Cluster)
	if got := c.Links(); got != cluster.LinksUserSpace {
		t.Errorf("links %q, want %q", got, cluster.LinksUserSpace)
	}
	if leader, err := cluster.WaitLeaderOf(ctx, c); err != nil || leader != 5 {
		t.Fatalf("first leader p%d (%v), want p5", leader, err)
	}
	put(t, c.Servers()[0].Client, "/k", "v1") // p1, in D1: the write crosses the link
	kill := time.Now()
	if err := c.Kill(ctx, 5); err != nil {
		t.Fatal(err)
	}
	leader, err := cluster.WaitLeaderOf(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if leader == 5 || leader < 1 {
		t.Fatalf("leader after the kill p%d", leader)
	}
	put(t, c.Servers()[leader-1].Client, "/k", "v2")
	var leading, first event.Event
	deadline := time.Now().Add(10 * time.Second)
	for first.Kind == "" && time.Now().Before(deadline) {
		for _, ev := range e.Timeline(leader) {
			switch {
			case ev.Kind == event.Leading && ev.Time().After(kill):
				leading = ev
			case ev.Kind == event.FirstCommit && ev.Time().After(kill):
				first = ev
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if leading.Kind == "" || first.Kind == "" || first.Time().Before(leading.Time()) || first.Epoch != leading.Epoch {
		t.Fatalf("p%d's timeline after the kill: LEADING %+v, FIRST_COMMIT %+v; events %+v", leader, leading, first, e.Timeline(leader))
	}
	// The winner was up to date: no survivor's last vote request named a newer log
	// than the winner's own in the term it won.
	var won uint64
	for _, ev := range e.Timeline(leader) {
		if ev.Kind == event.Election && ev.Epoch == leading.Epoch {
			won = uint64(ev.Zxid)
		}
	}
	if won == 0 {
		t.Fatalf("p%d led term %d without an ELECTION of that term: %+v", leader, leading.Epoch, e.Timeline(leader))
	}
	for _, id := range []int{1, 2, 3, 4} {
		for _, ev := range e.Timeline(id) {
			if ev.Kind == event.Election && ev.Time().After(kill) && !ev.Time().After(leading.Time()) && uint64(ev.Zxid) > won {
				t.Errorf("p%d stood with a newer log (%#x) than the winner p%d (%#x)", id, uint64(ev.Zxid), leader, won)
			}
		}
	}
	t.Logf("p%d leads term %d: election %v (kill to LEADING), recovery %v (LEADING to first commit)", leader, leading.Epoch,
		leading.Time().Sub(kill), first.Time().Sub(leading.Time()))
	rtts := e.MeasuredRTTs()
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
	restartFollows(ctx, t, c, e)
	logs := t.TempDir()
	if err := c.CollectLogs(ctx, logs); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(logs, ConfigFile)); err != nil || !strings.Contains(string(b), `"heartbeat": "100ms"`) {
		t.Errorf("%s: %s, %v; want the resolved heartbeat (etcd's 100 ms: the widest RTT, 20.75 ms, is below it)", ConfigFile, b, err)
	}
	shm := e.shm
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	if _, err := os.Stat(shm); !os.IsNotExist(err) {
		t.Errorf("data on tmpfs %s left behind: %v", shm, err)
	}
	if left, err := Down(label); err != nil || len(left) > 0 {
		t.Errorf("after Close, Down(%s) found %v (%v)", label, left, err)
	}
}

// restartFollows restarts the killed p5 and checks that it serves, reads the "/k" = v2
// written while it was down, and follows.
func restartFollows(ctx context.Context, t *testing.T, c cluster.Cluster, e *Cluster) {
	t.Helper()
	if err := c.Restart(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitServingOf(ctx, c, c.Servers(), c.Alive); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c.Servers()[4].Client, "/k"); got != "v2" {
		t.Errorf("restarted p5 reads %q, want v2", got)
	}
	if mode, err := e.Mode(ctx, 5); err != nil || mode != "follower" {
		t.Errorf("restarted p5: mode %q, %v", mode, err)
	}
}
