package netns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/vishvananda/netns"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
)

// testLabel is unique per test and process, so parallel packages never collide.
func testLabel(tag string) string {
	return fmt.Sprintf("t%s%d", tag, os.Getpid()%100000)
}

// leftovers lists what cluster label left on this machine (bridge.Leftovers).
func leftovers(t *testing.T, label string, sw netns.NsHandle, inodes map[uint64]string) []string {
	t.Helper()
	left, err := bridge.Leftovers(label, sw, inodes)
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// nsInodes maps the inode of each of the cluster's namespaces to its name.
func nsInodes(t *testing.T, label string) map[uint64]string {
	t.Helper()
	in, err := bridge.Inodes(label)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// dialFrom dials addr from inside namespace ns: the socket is made on a thread in ns
// and keeps that namespace.
func dialFrom(ns netns.NsHandle, addr string) (string, error) {
	var conn net.Conn
	err := bridge.OnThread(func() error {
		if err := netns.Set(ns); err != nil {
			return err
		}
		var err error
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.LocalAddr().String(), nil
}

// TestNetnsCluster runs the 2DC spec's five servers as real poled processes in
// namespaces: a write through p1 (D1) is read back from p4 (D2), servers reach each
// other across the bridge, a killed server restarts with its data, and Close leaves
// nothing behind.
func TestNetnsCluster(t *testing.T) {
	clustertest.NeedRoot(t)
	topo := clustertest.TwoDC(t)
	label := testLabel("c")
	plan := netem.NewPlan(topo, netem.DefaultOptions(1))
	t0 := time.Now()
	cl, err := New(t.Context(), cluster.Options{Topology: topo, Plan: plan, InitialLeader: 5, Label: label, Logger: clustertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*Cluster)
	t.Logf("TIMING cluster of %d up in %v (links %s)", topo.N(), time.Since(t0).Round(time.Millisecond), c.Links())
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close(context.Background())
		}
	})
	sw, err := netns.GetFromName(bridge.Name(label, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	inodes := nsInodes(t, label)
	if len(inodes) != 6 {
		t.Fatalf("%d namespaces of %s, want 6: %v", len(inodes), label, inodes)
	}

	t.Run("links", func(t *testing.T) {
		probeErr := netem.Probe(t.Context())
		want := cluster.LinksKernel
		if probeErr != nil {
			want = cluster.LinksUserSpace
		}
		if c.Links() != want {
			t.Fatalf("Links() = %q, want %q (probe: %v)", c.Links(), want, probeErr)
		}
		for _, s := range c.Servers() {
			cfg, err := replica.LoadConfig(c.configFile(s.ID))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Self().ClientAddr() != s.Client || cfg.Self().AdminAddr() != s.Admin || cfg.DataDir != c.dataDir(s.ID) {
				t.Errorf("p%d: config %+v does not match server %+v", s.ID, cfg.Self(), s)
			}
			if cfg.InitialLeader != 5 {
				t.Errorf("p%d: initial_leader %d, want 5", s.ID, cfg.InitialLeader)
			}
			if want == cluster.LinksKernel {
				if cfg.LinkPlan != "" {
					t.Errorf("p%d: kernel links but link_plan %q", s.ID, cfg.LinkPlan)
				}
				continue
			}
			got, err := netem.ReadPlan(cfg.LinkPlan)
			if err != nil {
				t.Fatalf("p%d: link_plan: %v", s.ID, err)
			}
			l, _ := got.Link(1, 4)
			if w, _ := plan.Link(1, 4); l != w || len(got.Links) != len(plan.Links) {
				t.Errorf("p%d: link plan %s differs from the cluster's", s.ID, cfg.LinkPlan)
			}
		}
		if want == cluster.LinksKernel {
			out, err := Show(t.Context(), label)
			if err != nil || !strings.Contains(out, "netem") {
				t.Fatalf("Show: %v\n%s", err, out)
			}
		} else if err := Apply(t.Context(), label, plan); err == nil || !strings.Contains(err.Error(), probeErr.Error()) {
			t.Fatalf("Apply on a kernel without netem: %v, want the probe's reason %q", err, probeErr)
		}
	})

	t.Run("namespaces", func(t *testing.T) {
		subnet := c.Subnet()
		for _, s := range c.Servers() {
			pid := c.Pid(s.ID)
			ino, err := bridge.ProcInode(pid)
			if err != nil {
				t.Fatal(err)
			}
			if inodes[ino] != bridge.Name(label, s.ID) {
				t.Errorf("p%d (pid %d) runs in namespace %q, want %s", s.ID, pid, inodes[ino], bridge.Name(label, s.ID))
			}
			host, _, _ := net.SplitHostPort(s.Client)
			if a := netip.MustParseAddr(host); !subnet.Contains(a) || a == c.net.HostAddr() {
				t.Errorf("p%d: address %s is not a server address of %s", s.ID, a, subnet)
			}
		}
		// Server to server, across the bridge: p1 (D1) dials p4's (D2) peer port.
		p1, err := netns.GetFromName(bridge.Name(label, 1))
		if err != nil {
			t.Fatal(err)
		}
		defer p1.Close()
		host, _, _ := net.SplitHostPort(c.Servers()[3].Client)
		local, err := dialFrom(p1, net.JoinHostPort(host, strconv.Itoa(cluster.PeerPort)))
		if err != nil {
			t.Fatalf("p1 cannot reach p4's peer port: %v", err)
		}
		p1Host, _, _ := net.SplitHostPort(c.Servers()[0].Client)
		if !strings.HasPrefix(local, p1Host+":") {
			t.Errorf("the connection from p1's namespace left from %s, want p1's address %s", local, p1Host)
		}
	})

	t.Run("zookeeper", func(t *testing.T) {
		w := clustertest.Session(t, c.Servers()[0].Client)
		path := "/netns-" + label
		if _, err := w.Create(path, []byte("written via p1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create through p1: %v", err)
		}
		r := clustertest.Session(t, c.Servers()[3].Client)
		if _, err := r.Sync(path); err != nil {
			t.Fatalf("sync through p4: %v", err)
		}
		data, _, err := r.Get(path)
		if err != nil || string(data) != "written via p1" {
			t.Fatalf("read through p4: %q, %v", data, err)
		}
	})

	t.Run("kill-restart", func(t *testing.T) {
		if err := c.Kill(t.Context(), 2); err != nil {
			t.Fatal(err)
		}
		if c.Alive(2) {
			t.Fatal("p2 alive after Kill")
		}
		if err := c.Kill(t.Context(), 2); err == nil {
			t.Fatal("killing a dead server succeeded")
		}
		if _, err := net.DialTimeout("tcp", c.Servers()[1].Client, time.Second); err == nil {
			t.Fatal("p2's client port accepts connections after Kill")
		}
		t1 := time.Now()
		if err := c.Restart(t.Context(), 2); err != nil {
			t.Fatal(err)
		}
		t.Logf("TIMING restart of p2 in %v", time.Since(t1).Round(time.Millisecond))
		if !c.Alive(2) {
			t.Fatal("p2 not alive after Restart")
		}
		if err := c.Restart(t.Context(), 2); err == nil {
			t.Fatal("restarting a running server succeeded")
		}
		if ino, _ := bridge.ProcInode(c.Pid(2)); inodes[ino] != bridge.Name(label, 2) {
			t.Fatalf("restarted p2 runs in %q", inodes[ino])
		}
		// p2 comes back with its data: the write made before the kill is there.
		r := clustertest.Session(t, c.Servers()[1].Client)
		path := "/netns-" + label
		if _, err := r.Sync(path); err != nil {
			t.Fatalf("sync through restarted p2: %v", err)
		}
		if data, _, err := r.Get(path); err != nil || string(data) != "written via p1" {
			t.Fatalf("read through restarted p2: %q, %v", data, err)
		}
		dir := t.TempDir()
		if err := c.CollectLogs(t.Context(), dir); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "p2.log"))
		if err != nil || strings.Count(string(b), "=== polebench: start") != 2 {
			t.Fatalf("p2.log should hold two starts: %v\n%s", err, b)
		}
	})

	t.Run("label-taken", func(t *testing.T) {
		_, err := New(t.Context(), cluster.Options{Topology: topo, Plan: plan, Label: label})
		if err == nil || !strings.Contains(err.Error(), "exists") {
			t.Fatalf("a second cluster with a running label: %v", err)
		}
		if got := nsInodes(t, label); len(got) != 6 {
			t.Fatalf("the failed start touched the running cluster: %d namespaces left", len(got))
		}
	})

	// The harness closes with the context SIGINT cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t2 := time.Now()
	err = c.Close(ctx)
	closed = true
	t.Logf("TIMING close in %v", time.Since(t2).Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, label, sw, inodes); len(left) > 0 {
		t.Fatalf("Close left behind:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(c.DataRoot()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary data root %s survives Close: %v", c.DataRoot(), err)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestNetnsDown abandons a running cluster, as a crashed harness would, and removes
// it with Down.
func TestNetnsDown(t *testing.T) {
	clustertest.NeedRoot(t)
	topo := clustertest.TwoDC(t)
	label := testLabel("d")
	dataRoot := t.TempDir()
	cl, err := New(t.Context(), cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label, DataRoot: dataRoot})
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*Cluster)
	pids := map[int]bool{}
	for _, s := range c.Servers() {
		pids[c.Pid(s.ID)] = true
	}
	inodes := nsInodes(t, label)
	sw, err := netns.GetFromName(bridge.Name(label, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	c.net.Close() // what a crash does to the harness's handles; no Close

	t0 := time.Now()
	removed, err := Down(t.Context(), label)
	t.Logf("TIMING Down in %v: removed\n%s", time.Since(t0).Round(time.Millisecond), strings.Join(removed, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var procs, spaces int
	for _, r := range removed {
		switch {
		case strings.HasPrefix(r, "process "):
			pid, _ := strconv.Atoi(strings.Fields(r)[1])
			if !pids[pid] {
				t.Errorf("Down killed %q, not one of the servers %v", r, pids)
			}
			procs++
		case strings.HasPrefix(r, "namespace "):
			spaces++
		}
	}
	if procs != topo.N() || spaces != topo.N()+1 {
		t.Errorf("Down removed %d processes and %d namespaces, want %d and %d", procs, spaces, topo.N(), topo.N()+1)
	}
	if left := leftovers(t, label, sw, inodes); len(left) > 0 {
		t.Fatalf("Down left behind:\n%s", strings.Join(left, "\n"))
	}
	for _, s := range c.Servers() {
		if c.Alive(s.ID) {
			t.Errorf("p%d still alive", s.ID)
		}
	}
	if _, err := os.Stat(filepath.Join(dataRoot, "p1")); err != nil {
		t.Errorf("Down must leave data alone: %v", err)
	}
	removed, err = Down(t.Context(), label)
	if err != nil || len(removed) != 0 {
		t.Errorf("a second Down: removed %v, %v", removed, err)
	}
}

// TestNetnsStartFailure: a server that dies at start fails New with its log, an
// interrupt (ctx cancelled) while servers start stops the start, and neither leaves
// anything behind.
func TestNetnsStartFailure(t *testing.T) {
	clustertest.NeedRoot(t)
	topo := clustertest.TwoDC(t)
	for _, tc := range []struct {
		name, script string
		cancelAfter  time.Duration
		want         []string
	}{
		{"dies", "echo 'cannot start: broken on purpose' >&2\nexit 3", 0, []string{"broken on purpose", "exit status 3"}},
		{"interrupted", "echo 'never listens' >&2\ntouch \"$(dirname \"$0\")/said\"\nexec sleep 600", time.Millisecond, []string{"context canceled", "never listens"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bad, pids := filepath.Join(dir, "poled"), filepath.Join(dir, "pids")
			script := "#!/bin/sh\necho $$ >>" + pids + "\n" + tc.script + "\n"
			if err := os.WriteFile(bad, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv(cluster.PoledEnv, bad)
			ctx := t.Context()
			if tc.cancelAfter > 0 {
				// Interrupted once the server has said something (a state, not a time:
				// a busy host may take long to start it).
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				go func() {
					defer cancel()
					for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
						if _, err := os.Stat(filepath.Join(dir, "said")); err == nil {
							return
						}
					}
				}()
			}
			label := testLabel("f" + tc.name[:1])
			_, err := New(ctx, cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("New: %v; want an error with %q", err, w)
				}
			}
			left := leftovers(t, label, netns.None(), nil)
			b, _ := os.ReadFile(pids)
			started := strings.Fields(string(b))
			for _, pid := range started {
				if _, err := os.Stat("/proc/" + pid); err == nil {
					left = append(left, "process "+pid)
				}
			}
			if len(left) > 0 {
				t.Fatalf("a failed start left behind:\n%s", strings.Join(left, "\n"))
			}
			if len(started) == 0 {
				t.Fatal("no server was started at all")
			}
		})
	}
}

// BenchmarkNetnsStartClose starts the 2DC spec's five poled servers on netns and
// closes them: go test ./cluster/netns -run '^$' -bench NetnsStartClose -benchtime 5x
func BenchmarkNetnsStartClose(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	topo := clustertest.TwoDC(b)
	plan := netem.NewPlan(topo, netem.DefaultOptions(0))
	if _, err := procs.Poled(b.Context(), slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err) // build outside the timing
	}
	var up, down time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		c, err := New(b.Context(), cluster.Options{Topology: topo, Plan: plan, Label: fmt.Sprintf("b%d-%d", os.Getpid()%10000, i)})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := c.Close(b.Context()); err != nil {
			b.Fatal(err)
		}
		up, down = up+t1.Sub(t0), down+time.Since(t1)
	}
	b.ReportMetric(float64(up.Milliseconds())/float64(b.N), "ms-start/op")
	b.ReportMetric(float64(down.Milliseconds())/float64(b.N), "ms-close/op")
}

// TestNetnsRelativeDataRoot: a data root relative to the harness's working directory
// (the default results/... of `polebench run`) is where the servers keep their data,
// though each runs in a namespace of its own.
func TestNetnsRelativeDataRoot(t *testing.T) {
	clustertest.NeedRoot(t)
	topo := clustertest.TwoDC(t)
	poled, err := procs.Poled(t.Context(), clustertest.Logger(t)) // found from the source tree, before leaving it
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("POLEBENCH_POLED", poled)
	dir := t.TempDir()
	t.Chdir(dir)
	cl, err := cluster.New(t.Context(), backend.Netns, cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(1)), InitialLeader: 5,
		Label: testLabel("r"), Logger: clustertest.Logger(t), DataRoot: "data"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(context.Background())
	if _, err := cluster.WaitLeader(t.Context(), cl.Servers(), cl.Alive); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "data")); err != nil || len(entries) == 0 {
		t.Errorf("nothing in %s/data (%v): the servers kept their data elsewhere", dir, err)
	}
}
