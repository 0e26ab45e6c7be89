// Package swarmtest gives tests a Docker Swarm on this machine: the local engine as a
// single-node manager (Manager) and a second engine joined to it as a worker (Worker),
// each in the state it found when the test ends. Other tests share the engine (plain
// containers of the docker backend), which swarm mode does not disturb; tests that
// change swarm mode take a machine-wide lock, so two never init or leave at once.
package swarmtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/client"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/swarm/internal/single"
)

// Require fails the test under CI, and skips it elsewhere, unless this machine can
// run a swarm test: root (the second engine's namespace) and a Docker engine.
func Require(t testing.TB) *client.Client {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") != "" {
		fail = t.Fatalf
	}
	if os.Geteuid() != 0 {
		fail("swarm tests need root, and CI runs as root")
	}
	cli, err := image.Connect(t.Context())
	if err != nil {
		fail("swarm tests need a Docker engine (Debian package docker.io, running): %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Manager makes the local engine a swarm manager for the test (single.Take): a
// single-node swarm it initialises, unless the engine manages one already (then it is
// used as it is). When the test ends, a swarm it made is left and the engine is as it
// was; a swarm that a killed test (or night) made is taken over and left in the same
// way, with what its runs left. It holds the machine-wide lock until then.
func Manager(t testing.TB) *client.Client {
	t.Helper()
	cli := Require(t)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Minute)
	defer cancel()
	l, err := single.Take(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(l.Note)
	t.Cleanup(func() {
		if err := l.Release(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return cli
}

// Lock takes the machine-wide lock of everything that changes swarm mode, until the
// test ends (Manager takes it).
func Lock(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	unlock, err := single.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unlock)
}

// LabelNode sets the node's label key=value (such as swarm.LabelDC) for the test and
// restores the node's labels after it.
func LabelNode(t testing.TB, cli *client.Client, nodeID, key, value string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	nd, _, err := cli.NodeInspectWithRaw(ctx, nodeID)
	if err != nil {
		t.Fatal(err)
	}
	old, had := nd.Spec.Labels[key]
	spec := nd.Spec
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	spec.Labels[key] = value
	if err := cli.NodeUpdate(ctx, nodeID, nd.Version, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nd, _, err := cli.NodeInspectWithRaw(ctx, nodeID)
		if err != nil {
			return // the node left the swarm already
		}
		spec := nd.Spec
		delete(spec.Labels, key)
		if had {
			spec.Labels[key] = old
		}
		if err := cli.NodeUpdate(ctx, nodeID, nd.Version, spec); err != nil {
			t.Errorf("restore the labels of node %s: %v", nodeID, err)
		}
	})
}

// Engine is a second Docker engine on this machine.
type Engine struct {
	Host   string // DOCKER_HOST of it: unix://DIR/docker.sock
	NodeID string // its node in the swarm
	Addr   string // the address it advertises to the swarm, in its own namespace
	Client *client.Client
}

// workerRoot holds every worker's files; a worker of a killed test is found there.
const workerRoot = "/run/polebench-swarmtest"

// workerSubnets: worker k's namespace is 10.217.k.2, the host's end 10.217.k.1.
var workerSubnets = netip.MustParsePrefix("10.217.0.0/16")

// Worker starts a second dockerd on this machine and joins it to the manager's swarm
// as a worker. It has its own data root, exec root, pid file and socket, and its own
// network namespace, reached from the host by a veth: its firewall, bridges and swarm
// ports are its own, so it never fights the first engine over iptables or ports. The
// host reaches the worker from the swarm's advertised address (a route with that
// source): the overlay's VXLAN drops packets whose outer source is not the address a
// node is known by. When the test ends the worker leaves, is removed from the swarm,
// stops, and its namespace and files go.
func Worker(t testing.TB, mgr *client.Client) *Engine {
	t.Helper()
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Fatalf("a second engine needs dockerd (Debian package docker.io): %v", err)
	}
	ctx := context.WithoutCancel(t.Context())
	info, err := mgr.Info(ctx)
	if err != nil || !info.Swarm.ControlAvailable {
		t.Fatalf("Worker needs a swarm manager (swarmtest.Manager): %v %v", info.Swarm.LocalNodeState, err)
	}
	removeStaleWorkers(t)
	k := os.Getpid() % 250
	name := fmt.Sprintf("pbsw%d", os.Getpid())
	dir := filepath.Join(workerRoot, name)
	host, wAddr := subnetAddr(k, 1), subnetAddr(k, 2)
	e := &Engine{Host: "unix://" + dir + "/docker.sock", Addr: wAddr.String()}
	var dockerd *exec.Cmd
	t.Cleanup(func() { stopWorker(t, mgr, e, dockerd, name, dir) })

	// The worker's namespace and the veth to it.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := newNamedNS(name); err != nil {
		t.Fatalf("worker namespace: %v", err)
	}
	nsh, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer nsh.Close()
	hv := name + "h"
	if len(hv) > 15 {
		hv = hv[len(hv)-15:]
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = hv
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(nsh)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("veth to the worker: %v", err)
	}
	hl, err := netlink.LinkByName(hv)
	if err != nil {
		t.Fatal(err)
	}
	must(t, netlink.AddrAdd(hl, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(host, 24))}))
	must(t, netlink.LinkSetUp(hl))
	nh, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	wl, err := nh.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	must(t, nh.AddrAdd(wl, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(wAddr, 24))}))
	must(t, nh.LinkSetUp(wl))
	lo, err := nh.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	must(t, nh.LinkSetUp(lo))
	must(t, nh.RouteAdd(&netlink.Route{LinkIndex: wl.Attrs().Index, Gw: host.AsSlice()}))
	mgrAddr := netip.MustParseAddr(info.Swarm.NodeAddr)
	must(t, netlink.RouteReplace(&netlink.Route{LinkIndex: hl.Attrs().Index, Dst: ipNet(netip.PrefixFrom(host, 24).Masked()),
		Src: mgrAddr.AsSlice(), Scope: netlink.SCOPE_LINK}))

	// dockerd inside it: nsenter changes the network namespace only (ip netns exec
	// would also remount /sys, hiding the cgroups dockerd needs).
	must(t, os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644)) // not /etc/docker/daemon.json
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dockerd = exec.Command("nsenter", "--net=/run/netns/"+name, "dockerd",
		"--config-file", filepath.Join(dir, "daemon.json"), "--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"), "--pidfile", filepath.Join(dir, "docker.pid"),
		"-H", e.Host, "--storage-driver", "vfs", "--bridge", "none")
	dockerd.Stdout, dockerd.Stderr = logf, logf
	dockerd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	if err := dockerd.Start(); err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	if e.Client, err = client.NewClientWithOpts(client.WithHost(e.Host), client.WithAPIVersionNegotiation()); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := e.Client.Ping(ctx); err == nil {
			break
		}
		if time.Since(t0) > time.Minute {
			b, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			t.Fatalf("the second dockerd does not answer after a minute; its log:\n%s", tail(string(b), 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	sw, err := mgr.SwarmInspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Client.SwarmJoin(ctx, swarm.JoinRequest{ListenAddr: "0.0.0.0:2377", AdvertiseAddr: e.Addr,
		RemoteAddrs: []string{info.Swarm.NodeAddr + ":2377"}, JoinToken: sw.JoinTokens.Worker}); err != nil {
		t.Fatalf("the second engine joins the swarm: %v", err)
	}
	winfo, err := e.Client.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.NodeID = winfo.Swarm.NodeID
	for {
		nd, _, err := mgr.NodeInspectWithRaw(ctx, e.NodeID)
		if err == nil && nd.Status.State == swarm.NodeStateReady {
			break
		}
		if time.Since(t0) > 2*time.Minute {
			t.Fatalf("worker node %s not ready: %v %v", e.NodeID, nd.Status, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("second engine %s (pid %d, namespace %s at %s) joined as worker node %s in %v",
		e.Host, dockerd.Process.Pid, name, e.Addr, e.NodeID, time.Since(t0).Round(time.Millisecond))
	return e
}

// stopWorker takes the worker out of the swarm and removes it: node, dockerd, files,
// namespace. It runs whatever state Worker reached.
func stopWorker(t testing.TB, mgr *client.Client, e *Engine, dockerd *exec.Cmd, name, dir string) {
	ctx := context.Background()
	if e.Client != nil {
		if err := e.Client.SwarmLeave(ctx, true); err != nil && e.NodeID != "" {
			t.Errorf("worker leaves the swarm: %v", err)
		}
		e.Client.Close()
	}
	if e.NodeID != "" {
		for i := 0; ; i++ {
			err := mgr.NodeRemove(ctx, e.NodeID, swarm.NodeRemoveOptions{Force: true})
			if err == nil || client.IsErrNotFound(err) {
				break
			}
			if i == 40 {
				t.Errorf("remove worker node %s: %v", e.NodeID, err)
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	if dockerd != nil && dockerd.Process != nil {
		stopProcess(dockerd.Process.Pid, func() { dockerd.Wait() })
	}
	if err := removeWorkerFiles(name, dir); err != nil {
		t.Errorf("remove the second engine: %v", err)
	}
}

// removeStaleWorkers removes what a killed test left of its workers.
func removeStaleWorkers(t testing.TB) {
	ents, _ := os.ReadDir(workerRoot)
	for _, ent := range ents {
		if !ent.IsDir() {
			continue
		}
		dir := filepath.Join(workerRoot, ent.Name())
		if b, err := os.ReadFile(filepath.Join(dir, "docker.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "dockerd" {
					stopProcess(pid, func() {
						for syscall.Kill(pid, 0) == nil {
							time.Sleep(100 * time.Millisecond)
						}
					})
				}
			}
		}
		if err := removeWorkerFiles(ent.Name(), dir); err != nil {
			t.Logf("stale worker %s: %v", ent.Name(), err)
		} else {
			t.Logf("removed stale worker %s", ent.Name())
		}
	}
}

// stopProcess sends SIGTERM and, after 20 s, SIGKILL; wait returns when it is gone.
func stopProcess(pid int, wait func()) {
	syscall.Kill(pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(pid, syscall.SIGKILL)
		<-done
	}
}

// removeWorkerFiles unmounts what the engine left mounted under dir (its netns
// bind mounts, the shims' rootfs), removes dir and deletes the namespace (its veth
// goes with it).
func removeWorkerFiles(name, dir string) error {
	var errs []error
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		var mounts []string
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
				mounts = append(mounts, f[1])
			}
		}
		for i := len(mounts) - 1; i >= 0; i-- { // deepest last mounted first
			if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mounts[i], err))
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("namespace %s: %w", name, err))
	}
	return errors.Join(errs...)
}

func subnetAddr(k, last int) netip.Addr {
	b := workerSubnets.Addr().As4()
	b[2], b[3] = byte(k), byte(last)
	return netip.AddrFrom4(b)
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
}

// newNamedNS creates a named network namespace (bind-mounted under /run/netns) on a
// thread of its own, which goes back to its namespace before it is released.
func newNamedNS(name string) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			ch <- err
			return // the thread stays locked: Go discards it
		}
		defer orig.Close()
		ns, err := netns.NewNamed(name)
		if err == nil {
			ns.Close()
		}
		if serr := netns.Set(orig); serr != nil {
			ch <- errors.Join(err, serr)
			return
		}
		runtime.UnlockOSThread()
		ch <- err
	}()
	return <-ch
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Registry runs a private registry (Debian's docker-registry, the CNCF distribution
// server) on 127.0.0.1, which Docker engines trust without TLS, for the test, with its
// storage in a temporary directory. It returns host:port.
func Registry(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the registry test needs docker-registry (Debian package docker-registry): %v", err)
		}
		t.Skipf("no docker-registry (Debian package docker-registry): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yml")
	must(t, os.WriteFile(conf, fmt.Appendf(nil, "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n",
		filepath.Join(dir, "data"), addr), 0o644))
	cmd := exec.Command(bin, "serve", conf)
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	for t0 := time.Now(); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Since(t0) > 30*time.Second {
			b, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			t.Fatalf("docker-registry does not listen on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
