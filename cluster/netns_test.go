package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/spec"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsNeedRoot skips without root, except in CI, where the netns backend must be tested.
func netnsNeedRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("the netns backend tests need root (CI runs them as root)")
	}
	t.Skip("the netns backend tests need root")
}

// netnsTestLabel is unique per test and process, so parallel packages never collide.
func netnsTestLabel(t *testing.T, tag string) string {
	return fmt.Sprintf("t%s%d", tag, os.Getpid()%100000)
}

type netnsTestWriter struct{ t *testing.T }

func (w netnsTestWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func netnsTestLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(netnsTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// netnsLeftovers lists what cluster label left on this machine: namespaces, host
// veths, links in the switch namespace sw (a handle the test opened before Close;
// invalid to skip), and processes in the namespaces whose inodes are given.
func netnsLeftovers(t *testing.T, label string, sw netns.NsHandle, inodes map[uint64]string) []string {
	t.Helper()
	var left []string
	found, err := netnsList()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.label == label {
			left = append(left, "namespace "+f.name)
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if l.Attrs().Name == netnsHostVeth(label) || l.Attrs().Alias == netnsAlias(label) {
			left = append(left, "host link "+l.Attrs().Name)
		}
	}
	if sw.IsOpen() {
		h, err := netlink.NewHandleAt(sw, unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		links, err := h.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.Attrs().Name != "lo" {
				left = append(left, fmt.Sprintf("%s %s in the switch namespace", l.Type(), l.Attrs().Name))
			}
		}
	}
	procs, err := procsInNetns(inodes)
	if err != nil {
		t.Fatal(err)
	}
	for pid, ns := range procs {
		left = append(left, fmt.Sprintf("process %d (%s) in %s", pid, procComm(pid), ns))
	}
	slices.Sort(left)
	return left
}

// netnsInodes maps the inode of each of the cluster's namespaces to its name.
func netnsInodes(t *testing.T, label string) map[uint64]string {
	t.Helper()
	found, err := netnsList()
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, f := range found {
		if f.label != label {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(netnsDir, f.name), &st); err != nil {
			t.Fatal(err)
		}
		out[st.Ino] = f.name
	}
	return out
}

// netnsDialFrom dials addr from inside namespace ns: the socket is made on a thread
// in ns and keeps that namespace.
func netnsDialFrom(ns netns.NsHandle, addr string) (string, error) {
	var conn net.Conn
	err := netnsOnThread(func() error {
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

type netnsZKLogger struct{ t *testing.T }

func (l netnsZKLogger) Printf(format string, a ...any) { l.t.Logf("zk: "+format, a...) }

func netnsZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(netnsZKLogger{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no ZooKeeper session with %s after 30s", addr)
		}
	}
}

// TestNetnsCluster runs the 2DC spec's five servers as real poled processes in
// namespaces: a write through p1 (D1) is read back from p4 (D2), servers reach each
// other across the bridge, a killed server restarts with its data, and Close leaves
// nothing behind.
func TestNetnsCluster(t *testing.T) {
	netnsNeedRoot(t)
	topo := twoDC(t)
	label := netnsTestLabel(t, "c")
	plan := netem.NewPlan(topo, netem.DefaultOptions(1))
	t0 := time.Now()
	cl, err := NewNetns(t.Context(), Options{Topology: topo, Plan: plan, InitialLeader: 5, Label: label, Logger: netnsTestLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*Netns)
	t.Logf("TIMING cluster of %d up in %v (links %s)", topo.N(), time.Since(t0).Round(time.Millisecond), c.Links())
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close(context.Background())
		}
	})
	sw, err := netns.GetFromName(netnsName(label, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	inodes := netnsInodes(t, label)
	if len(inodes) != 6 {
		t.Fatalf("%d namespaces of %s, want 6: %v", len(inodes), label, inodes)
	}

	t.Run("links", func(t *testing.T) {
		probeErr := netem.Probe(t.Context())
		want := LinksKernel
		if probeErr != nil {
			want = LinksUserSpace
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
			if want == LinksKernel {
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
		if want == LinksKernel {
			out, err := NetnsShow(t.Context(), label)
			if err != nil || !strings.Contains(out, "netem") {
				t.Fatalf("NetnsShow: %v\n%s", err, out)
			}
		} else if err := NetnsApply(t.Context(), label, plan); err == nil || !strings.Contains(err.Error(), probeErr.Error()) {
			t.Fatalf("NetnsApply on a kernel without netem: %v, want the probe's reason %q", err, probeErr)
		}
	})

	t.Run("namespaces", func(t *testing.T) {
		subnet := c.Subnet()
		for _, s := range c.Servers() {
			pid := c.Pid(s.ID)
			ino, err := procNetnsInode(pid)
			if err != nil {
				t.Fatal(err)
			}
			if inodes[ino] != netnsName(label, s.ID) {
				t.Errorf("p%d (pid %d) runs in namespace %q, want %s", s.ID, pid, inodes[ino], netnsName(label, s.ID))
			}
			host, _, _ := net.SplitHostPort(s.Client)
			if a := netip.MustParseAddr(host); !subnet.Contains(a) || a == netnsOctet(subnet, netnsHostOctet) {
				t.Errorf("p%d: address %s is not a server address of %s", s.ID, a, subnet)
			}
		}
		// Server to server, across the bridge: p1 (D1) dials p4's (D2) peer port.
		p1, err := netns.GetFromName(netnsName(label, 1))
		if err != nil {
			t.Fatal(err)
		}
		defer p1.Close()
		host, _, _ := net.SplitHostPort(c.Servers()[3].Client)
		local, err := netnsDialFrom(p1, net.JoinHostPort(host, strconv.Itoa(NetnsPeerPort)))
		if err != nil {
			t.Fatalf("p1 cannot reach p4's peer port: %v", err)
		}
		p1Host, _, _ := net.SplitHostPort(c.Servers()[0].Client)
		if !strings.HasPrefix(local, p1Host+":") {
			t.Errorf("the connection from p1's namespace left from %s, want p1's address %s", local, p1Host)
		}
	})

	t.Run("zookeeper", func(t *testing.T) {
		w := netnsZK(t, c.Servers()[0].Client)
		path := "/netns-" + label
		if _, err := w.Create(path, []byte("written via p1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create through p1: %v", err)
		}
		r := netnsZK(t, c.Servers()[3].Client)
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
		if ino, _ := procNetnsInode(c.Pid(2)); inodes[ino] != netnsName(label, 2) {
			t.Fatalf("restarted p2 runs in %q", inodes[ino])
		}
		// p2 comes back with its data: the write made before the kill is there.
		r := netnsZK(t, c.Servers()[1].Client)
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
		_, err := NewNetns(t.Context(), Options{Topology: topo, Plan: plan, Label: label})
		if err == nil || !strings.Contains(err.Error(), "exists") {
			t.Fatalf("a second cluster with a running label: %v", err)
		}
		if got := netnsInodes(t, label); len(got) != 6 {
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
	if left := netnsLeftovers(t, label, sw, inodes); len(left) > 0 {
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
// it with NetnsDown.
func TestNetnsDown(t *testing.T) {
	netnsNeedRoot(t)
	topo := twoDC(t)
	label := netnsTestLabel(t, "d")
	dataRoot := t.TempDir()
	cl, err := NewNetns(t.Context(), Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label, DataRoot: dataRoot})
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*Netns)
	pids := map[int]bool{}
	for _, s := range c.Servers() {
		pids[c.Pid(s.ID)] = true
	}
	inodes := netnsInodes(t, label)
	sw, err := netns.GetFromName(netnsName(label, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	c.net.close() // what a crash does to the harness's handles; no Close

	t0 := time.Now()
	removed, err := NetnsDown(t.Context(), label)
	t.Logf("TIMING NetnsDown in %v: removed\n%s", time.Since(t0).Round(time.Millisecond), strings.Join(removed, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var procs, spaces int
	for _, r := range removed {
		switch {
		case strings.HasPrefix(r, "process "):
			pid, _ := strconv.Atoi(strings.Fields(r)[1])
			if !pids[pid] {
				t.Errorf("NetnsDown killed %q, not one of the servers %v", r, pids)
			}
			procs++
		case strings.HasPrefix(r, "namespace "):
			spaces++
		}
	}
	if procs != topo.N() || spaces != topo.N()+1 {
		t.Errorf("NetnsDown removed %d processes and %d namespaces, want %d and %d", procs, spaces, topo.N(), topo.N()+1)
	}
	if left := netnsLeftovers(t, label, sw, inodes); len(left) > 0 {
		t.Fatalf("NetnsDown left behind:\n%s", strings.Join(left, "\n"))
	}
	for _, s := range c.Servers() {
		if c.Alive(s.ID) {
			t.Errorf("p%d still alive", s.ID)
		}
	}
	if _, err := os.Stat(filepath.Join(dataRoot, "p1")); err != nil {
		t.Errorf("NetnsDown must leave data alone: %v", err)
	}
	removed, err = NetnsDown(t.Context(), label)
	if err != nil || len(removed) != 0 {
		t.Errorf("a second NetnsDown: removed %v, %v", removed, err)
	}
}

// TestNetnsStartFailure: a server that dies at start fails NewNetns with its log, an
// interrupt (ctx cancelled) while servers start stops the start, and neither leaves
// anything behind.
func TestNetnsStartFailure(t *testing.T) {
	netnsNeedRoot(t)
	topo := twoDC(t)
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
			t.Setenv(PoledEnv, bad)
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
			label := netnsTestLabel(t, "f"+tc.name[:1])
			_, err := NewNetns(ctx, Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("NewNetns: %v; want an error with %q", err, w)
				}
			}
			left := netnsLeftovers(t, label, netns.None(), nil)
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

func TestNetnsNames(t *testing.T) {
	for _, tc := range []struct {
		name, label string
		id          int
		ok          bool
	}{
		{"pb-run1-p3", "run1", 3, true},
		{"pb-run1-sw", "run1", 0, true},
		{"pb-two-dc-p12-p5", "two-dc-p12", 5, true},
		{"pb-a-p0", "", 0, false},
		{"pb-a-p05", "", 0, false},
		{"pb-a-px", "", 0, false},
		{"pb--p1", "", 0, false},
		{"docker-p1", "", 0, false},
	} {
		label, id, ok := netnsParseName(tc.name)
		if ok != tc.ok || (ok && (label != tc.label || id != tc.id)) {
			t.Errorf("netnsParseName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, label, id, ok, tc.label, tc.id, tc.ok)
		}
		if ok && netnsName(label, id) != tc.name {
			t.Errorf("netnsName(%q, %d) = %q, want %q", label, id, netnsName(label, id), tc.name)
		}
	}
	for _, label := range []string{"", "-x", "a b", "a/b", strings.Repeat("x", 64)} {
		if netnsCheckLabel(label) == nil {
			t.Errorf("label %q accepted", label)
		}
	}
	long := strings.Repeat("x", 63)
	if err := netnsCheckLabel(long); err != nil {
		t.Error(err)
	}
	if v := netnsHostVeth(long); len(v) > 15 || v == netnsHostVeth(long[1:]) {
		t.Errorf("host veth name %q: too long, or not label-specific", v)
	}
}

// TestNetnsChooseSubnet: a /24 that a route already covers is never chosen.
func TestNetnsChooseSubnet(t *testing.T) {
	netnsNeedRoot(t)
	var ns netns.NsHandle
	if err := netnsOnThread(func() (err error) { ns, err = netns.New(); return err }); err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	first, err := netnsChooseSubnet(h, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !netnsSubnets.Contains(first.Addr()) || first.Bits() != 24 {
		t.Fatalf("chose %s, outside %s", first, netnsSubnets)
	}
	// Take the first choice with a route in another table, and the next one with an
	// address.
	dummy := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "d0"}, PeerName: "d1"}
	if err := h.LinkAdd(dummy); err != nil {
		t.Fatal(err)
	}
	if err := netnsUp(h, "d0", "d1"); err != nil {
		t.Fatal(err)
	}
	next := first.Addr().As4()
	next[2]++ // the chooser's next candidate (wrapping within the /16, as it does)
	second := netip.PrefixFrom(netip.AddrFrom4(next), 24)
	if err := netnsAddr(h, "d0", netip.PrefixFrom(netnsOctet(second, 7), 24)); err != nil {
		t.Fatal(err)
	}
	route := &netlink.Route{LinkIndex: dummy.Attrs().Index, Table: 100,
		Dst: &net.IPNet{IP: first.Addr().AsSlice(), Mask: net.CIDRMask(24, 32)}}
	if err := h.RouteAdd(route); err != nil {
		t.Fatal(err)
	}
	got, err := netnsChooseSubnet(h, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got.Overlaps(first) || got.Overlaps(second) || !netnsSubnets.Contains(got.Addr()) {
		t.Fatalf("chose %s, though %s (route in table 100) and %s (address) are taken", got, first, second)
	}
}

// BenchmarkNetnsStartClose starts the 2DC spec's five poled servers on netns and
// closes them: go test ./cluster -run '^$' -bench NetnsStartClose -benchtime 5x
func BenchmarkNetnsStartClose(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	spec, err := spec.Load("../experiments/two-dc.yaml")
	if err != nil {
		b.Fatal(err)
	}
	topo, err := spec.Topology()
	if err != nil {
		b.Fatal(err)
	}
	plan := netem.NewPlan(topo, netem.DefaultOptions(0))
	if _, err := netnsPoled(b.Context(), slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err) // build outside the timing
	}
	var up, down time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		c, err := NewNetns(b.Context(), Options{Topology: topo, Plan: plan, Label: fmt.Sprintf("b%d-%d", os.Getpid()%10000, i)})
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
	netnsNeedRoot(t)
	topo := twoDC(t)
	poled, err := netnsPoled(t.Context(), netnsTestLogger(t)) // found from the source tree, before leaving it
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("POLEBENCH_POLED", poled)
	dir := t.TempDir()
	t.Chdir(dir)
	cl, err := New(t.Context(), backend.Netns, Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(1)), InitialLeader: 5,
		Label: netnsTestLabel(t, "r"), Logger: netnsTestLogger(t), DataRoot: "data"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(context.Background())
	if _, err := WaitLeader(t.Context(), cl.Servers(), cl.Alive); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "data")); err != nil || len(entries) == 0 {
		t.Errorf("nothing in %s/data (%v): the servers kept their data elsewhere", dir, err)
	}
}
