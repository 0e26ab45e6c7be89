package etcdsys_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/etcd"
	_ "github.com/polebench/polebench/cluster/local"
	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/placement/controller"
	"github.com/polebench/polebench/placement/etcdsys"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
)

// TestControllerOnEtcd: on a real etcd cluster of three-dc-dep1's five members behind
// the plan's user-space links, with all load in fnal (p = 1): the latency policy moves
// the leader from p5 to the model's latency choice through etcd's MoveLeader, then holds
// still (the leader is the choice); with that member killed, a priority order that
// names it first passes it over for the next member it names that answers.
func TestControllerOnEtcd(t *testing.T) {
	if err := etcd.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real etcd needed under CI: %v", err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sp, err := spec.Resolve("three-dc-dep1")
	if err == nil {
		sp, err = sp.With(spec.Setting{Name: "p", Value: "1"})
	}
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sp.Topology()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := cluster.New(ctx, backend.Local, cluster.Options{Topology: topo, Flavor: etcd.Flavor, InitialLeader: 5,
		Label: fmt.Sprintf("placement-%d", os.Getpid()), Plan: sp.Plan(topo, 1), DataRoot: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	urls := map[int]string{}
	for _, s := range c.Servers() {
		urls[s.ID] = "http://" + s.Client
	}
	sys, err := etcdsys.New(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	cfg := controller.Config{Topology: topo, Policy: placement.Policy{Name: placement.Latency}, System: sys,
		Now: func() time.Duration { return time.Duration(netem.Now()) }}

	a, err := model.Analyze(topo, topo.Servers())
	if err != nil {
		t.Fatal(err)
	}
	e, err := a.Elect(score.Oracle{Name: score.Latency}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := e.Leader
	d := round(ctx, t, cfg)
	if !d.Move || d.Choice != want || d.Moved != "ok" {
		t.Fatalf("first round: %+v, want a move to the model's p%d", d, want)
	}
	waitLeader(ctx, t, c, want)
	if d := round(ctx, t, cfg); d.Move || d.Choice != want || !strings.Contains(d.Why, "is the policy's choice") {
		t.Fatalf("with p%d leading: %+v", want, d)
	}

	if err := c.Kill(ctx, want); err != nil {
		t.Fatal(err)
	}
	leader, err := cluster.WaitLeaderOf(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	next := 2
	if leader == 2 {
		next = 3
	}
	cfg.Policy = placement.Policy{Name: placement.Priority, Priority: []int{want, next}}
	d = round(ctx, t, cfg)
	if d.Choice != next || !d.Move || d.Moved != "ok" {
		t.Fatalf("priority [p%d, p%d] with p%d down and p%d leading: %+v", want, next, want, leader, d)
	}
	for _, id := range d.Eligible {
		if id == want {
			t.Fatalf("the killed p%d is eligible: %+v", want, d)
		}
	}
	waitLeader(ctx, t, c, next)
}

func round(ctx context.Context, t *testing.T, cfg controller.Config) controller.Decision {
	t.Helper()
	d, err := controller.Round(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader p%d, choice p%d, move %v (%s), moved %q, eligible %v, estimated %v", d.Leader, d.Choice, d.Move, d.Why, d.Moved, d.Eligible, d.Estimated)
	return d
}

// waitLeader waits (a deadline, not a timing claim) until want leads.
func waitLeader(ctx context.Context, t *testing.T, c cluster.Cluster, want int) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		leader, err := cluster.WaitLeaderOf(wctx, c)
		if err != nil {
			t.Fatalf("waiting for p%d to lead: %v", want, err)
		}
		if leader == want {
			return
		}
		select {
		case <-wctx.Done():
			t.Fatalf("p%d leads, not p%d", leader, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
