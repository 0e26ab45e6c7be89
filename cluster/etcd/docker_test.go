package etcd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	_ "github.com/polebench/polebench/cluster/docker"
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/cluster/internal/engine"
	"github.com/polebench/polebench/netem"
)

// requireDocker fails under CI when etcd cannot run in containers here (no root, no
// engine), and skips otherwise.
func requireDocker(t *testing.T) *client.Client {
	t.Helper()
	require(t)
	cli, err := image.Connect(t.Context())
	if err == nil && os.Geteuid() != 0 {
		cli.Close()
		err = bridge.CheckRoot()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("docker and root are required under CI: %v", err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestEtcdDocker: the two-DC spec's five servers as etcd containers of the image of
// this host's etcd, on the docker backend's bridge. p5 leads (moved there); each
// server's pid is its container's etcd, in the container's own network namespace;
// killed, p5's container stops and a survivor leads; restarted, p5 follows and
// reads what was written meanwhile (its data directory outlived its container's
// process); then the cluster is abandoned as a crashed harness would leave it, and
// cluster down removes its containers, its network and its data, leaving nothing.
func TestEtcdDocker(t *testing.T) {
	cli := requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	topo := clustertest.TwoDC(t)
	label := clustertest.Label(t)
	c, err := cluster.New(ctx, backend.Docker, cluster.Options{Topology: topo, Flavor: Flavor, InitialLeader: 5, Label: label,
		Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Logger: clustertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	e := c.(*Cluster)
	if got := c.Links(); got != cluster.LinksKernel && got != cluster.LinksUserSpace {
		t.Errorf("links %q, want kernel or user space", got)
	}
	if leader, err := cluster.WaitLeaderOf(ctx, c); err != nil || leader != 5 {
		t.Fatalf("first leader p%d (%v), want p5", leader, err)
	}
	host, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	hostIno, _ := bridge.Inode(host)
	host.Close()
	for _, id := range topo.Servers() {
		pid := e.Pid(id)
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte("\x00"+tokenPrefix+label+"\x00")) {
			t.Errorf("p%d: pid %d runs %q (%v), not this run's etcd", id, pid, cmdline, err)
		}
		ns, cpid, err := engine.ContainerNetns(ctx, cli, engine.ServerName(label, id))
		if err != nil {
			t.Fatal(err)
		}
		ino, _ := bridge.Inode(ns)
		ns.Close()
		if pino, err := bridge.ProcInode(pid); err != nil || cpid != pid || pino != ino || ino == hostIno {
			t.Errorf("p%d: pid %d (container's %d) in namespace %d (%v), container's %d, host's %d", id, pid, cpid, pino, err, ino, hostIno)
		}
	}
	put(t, c.Servers()[0].Client, "/k", "v1") // p1, in D1: the write crosses the link
	if err := c.Kill(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if info, err := cli.ContainerInspect(ctx, engine.ServerName(label, 5)); err != nil || info.State.Running || c.Alive(5) {
		t.Fatalf("p5 after Kill: alive %v, container %+v (%v)", c.Alive(5), info.State, err)
	}
	leader, err := cluster.WaitLeaderOf(ctx, c)
	if err != nil || leader == 5 || leader < 1 {
		t.Fatalf("leader after the kill p%d (%v)", leader, err)
	}
	put(t, c.Servers()[leader-1].Client, "/k", "v2")
	restartFollows(ctx, t, c, e)
	// A pause is SIGSTOP to Pid (the flavor is no cluster.Pauser): the container's etcd
	// stops, from this host's pid namespace too, and runs again on SIGCONT.
	pid := e.Pid(1)
	for _, step := range []struct {
		sig     unix.Signal
		stopped bool
	}{{unix.SIGSTOP, true}, {unix.SIGCONT, false}} {
		if err := unix.Kill(pid, step.sig); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for procStopped(t, pid) != step.stopped && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := procStopped(t, pid); got != step.stopped {
			t.Errorf("p1 (pid %d) after %v: stopped %v", pid, step.sig, got)
		}
	}

	removed, err := cluster.Down(ctx, label)
	if err != nil {
		t.Fatalf("cluster down %s: %v (removed %v)", label, err, removed)
	}
	for _, want := range []string{"container " + engine.ServerName(label, 1), "namespace " + bridge.Name(label, 0), "etcd data " + e.shm} {
		if !slices.Contains(removed, want) {
			t.Errorf("cluster down %s removed %v, not %s", label, removed, want)
		}
	}
	if objs, err := engine.Objects(ctx, cli, label); err != nil || len(objs) > 0 {
		t.Errorf("after cluster down: %v (%v)", objs, err)
	}
	if left, err := bridge.Leftovers(label, netns.None(), nil); err != nil || len(left) > 0 {
		t.Errorf("after cluster down: %v (%v)", left, err)
	}
	if _, err := os.Stat(e.shm); !os.IsNotExist(err) {
		t.Errorf("data on tmpfs %s left behind: %v", e.shm, err)
	}
}

// TestEtcdDockerCancelledStart cancels the start as Ctrl-C would, once the first
// container exists, and checks the start fails saying so and leaves nothing: no
// container, network or bridge, no data on tmpfs, no etcd process.
func TestEtcdDockerCancelledStart(t *testing.T) {
	cli := requireDocker(t)
	topo := clustertest.TwoDC(t)
	label := clustertest.Label(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if objs, err := engine.Objects(ctx, cli, label); err == nil && len(objs) > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	c, err := cluster.New(ctx, backend.Docker, cluster.Options{Topology: topo, Flavor: Flavor, Label: label,
		Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Logger: clustertest.Logger(t)})
	if err == nil {
		c.Close(t.Context())
		t.Fatal("the start succeeded although its context was cancelled while it created containers")
	}
	t.Log(err)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not say the start was cancelled", err)
	}
	if objs, err := engine.Objects(t.Context(), cli, label); err != nil || len(objs) > 0 {
		t.Errorf("cancelled start left %v (%v)", objs, err)
	}
	if left, err := bridge.Leftovers(label, netns.None(), nil); err != nil || len(left) > 0 {
		t.Errorf("cancelled start left %v (%v)", left, err)
	}
	if left, err := Down(label); err != nil || len(left) > 0 {
		t.Errorf("cancelled start left %v (%v)", left, err)
	}
}

// procStopped says whether process pid is stopped (state T in /proc/PID/stat).
func procStopped(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(b, ')') // after the command name, which may hold spaces
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
}
