package netns

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/vishvananda/netns"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/vmtest"
)

var (
	poledFlag = flag.String("netns.poled", "", "poled binary for TestNetnsKernel (its VM passes /bin/poled)")
	vmFlag    = flag.Bool("netns.vm", false, "set by TestNetnsKernel in its VM, where nothing else runs")
)

// TestNetnsKernel proves the kernel link path: with tc-netem in every namespace, a TCP
// handshake between the two DCs takes the plan's RTT and one inside a DC does not,
// real poled replicates over it, a restarted server keeps its tree, Clear and
// Apply remove and restore it, and Close leaves nothing. On a kernel without
// netem (this machine, most CI runners) the test boots Debian's cloud kernel in qemu
// and runs itself there, with a static poled beside it.
func TestNetnsKernel(t *testing.T) {
	clustertest.NeedRoot(t)
	if err := netem.Probe(t.Context()); err != nil {
		kernelInVM(t, err)
		return
	}
	if *poledFlag != "" {
		t.Setenv(cluster.PoledEnv, *poledFlag)
	}
	b, err := spec.Shipped("two-dc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := spec.Parse("two-dc.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := spec.Topology()
	if err != nil {
		t.Fatal(err)
	}
	plan := netem.NewPlan(topo, netem.DefaultOptions(1))
	label := testLabel("k")
	t0 := time.Now()
	cl, err := New(t.Context(), cluster.Options{Topology: topo, Plan: plan, InitialLeader: 5, Label: label, Logger: clustertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*Cluster)
	t.Logf("TIMING cluster up in %v", time.Since(t0).Round(time.Millisecond))
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close(context.Background())
		}
	})
	if c.Links() != cluster.LinksKernel {
		t.Fatalf("Links() = %q on a kernel with netem", c.Links())
	}
	if cfg, err := replica.LoadConfig(c.configFile(1)); err != nil || cfg.LinkPlan != "" {
		t.Fatalf("kernel links, but p1's config has link_plan %q (%v)", cfg.LinkPlan, err)
	}
	sw, err := netns.GetFromName(bridge.Name(label, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	inodes := nsInodes(t, label)
	p1, err := netns.GetFromName(bridge.Name(label, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	srv := c.Servers()
	cross, _ := plan.Link(1, 4)
	rttCross, rttIntra := plan.RTT(1, 4), plan.RTT(1, 2)

	// expect measures TCP handshakes from p1 to p2 (same DC) and p4 (other DC).
	expect := func(step string, delayed bool) {
		t.Helper()
		intra := handshake(t, p1, srv[1].Admin)
		other := handshake(t, p1, srv[3].Admin)
		t.Logf("%s: handshake p1->p2 %v (plan %v), p1->p4 %v (plan %v)", step, intra, rttIntra, other, rttCross)
		if intra > rttCross/4 {
			t.Errorf("%s: p1->p2 handshake %v, want about %v", step, intra, rttIntra)
		}
		if delayed && (other < rttCross*9/10 || other > rttCross*3/2) {
			t.Errorf("%s: p1->p4 handshake %v, want about the plan's %v", step, other, rttCross)
		}
		if !delayed && other > rttCross/4 {
			t.Errorf("%s: p1->p4 handshake %v without netem", step, other)
		}
	}
	showHas := func(step string, want bool) {
		t.Helper()
		out, err := Show(t.Context(), label)
		if err != nil {
			t.Fatalf("%s: Show: %v", step, err)
		}
		p4 := strings.Split(srv[3].Client, ":")[0]
		has := strings.Contains(out, fmt.Sprintf("delay %v", cross.Delay)) && strings.Contains(out, p4)
		if has != want || strings.Count(out, " dev "+bridge.Dev+":") != topo.N() {
			t.Fatalf("%s: Show (want the %v leaf to p4: %v):\n%s", step, cross.Delay, want, out)
		}
	}
	showHas("start", true)
	expect("start", true)

	w := clustertest.Session(t, srv[0].Client)
	if _, err := w.Create("/k", []byte("over netem"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create through p1: %v", err)
	}
	r := clustertest.Session(t, srv[3].Client)
	if _, err := r.Sync("/k"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := r.Get("/k"); err != nil || string(data) != "over netem" {
		t.Fatalf("read through p4: %q, %v", data, err)
	}
	w.Close()
	r.Close()

	if err := c.Kill(t.Context(), 4); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(t.Context(), 4); err != nil {
		t.Fatal(err)
	}
	showHas("restart", true)
	expect("restart", true)

	if err := Clear(t.Context(), label); err != nil {
		t.Fatal(err)
	}
	showHas("clear", false)
	expect("clear", false)
	if err := Apply(t.Context(), label, plan); err != nil {
		t.Fatal(err)
	}
	showHas("apply", true)
	expect("apply", true)

	t1 := time.Now()
	err = c.Close(context.Background())
	closed = true
	t.Logf("TIMING close in %v", time.Since(t1).Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, label, sw, inodes); len(left) > 0 {
		t.Fatalf("Close left behind:\n%s", strings.Join(left, "\n"))
	}

	// Only inside the VM, where no one else's cluster can be hit: Down with no
	// label removes every netns cluster, here two abandoned ones.
	if !*vmFlag {
		return
	}
	var labels []string
	for _, l := range []string{label + "x", label + "y"} {
		cl, err := New(t.Context(), cluster.Options{Topology: topo, Plan: plan, Label: l})
		if err != nil {
			t.Fatal(err)
		}
		cl.(*Cluster).net.Close() // abandoned: no Close
		labels = append(labels, l)
	}
	removed, err := Down(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labels {
		n := 0
		for _, r := range removed {
			if strings.Contains(r, strings.TrimSuffix(bridge.Name(l, 0), "sw")) {
				n++
			}
		}
		if left := leftovers(t, l, netns.None(), nil); len(left) > 0 || n == 0 {
			t.Fatalf("Down(\"\") removed %d things of %s and left behind:\n%s\nremoved:\n%s", n, l, strings.Join(left, "\n"), strings.Join(removed, "\n"))
		}
	}
	if found, _ := bridge.List(); len(found) > 0 {
		t.Fatalf("Down(\"\") left namespaces: %v", found)
	}
	procs := 0
	for _, r := range removed {
		if strings.HasPrefix(r, "process ") {
			procs++
		}
	}
	if procs != 2*topo.N() {
		t.Fatalf("Down(\"\") killed %d processes, want %d:\n%s", procs, 2*topo.N(), strings.Join(removed, "\n"))
	}
}

// handshake is the median time of five TCP connects from namespace ns to addr:
// one round trip.
func handshake(t *testing.T, ns netns.NsHandle, addr string) time.Duration {
	t.Helper()
	var ds []time.Duration
	for range 5 {
		t0 := time.Now()
		if _, err := dialFrom(ns, addr); err != nil {
			t.Fatalf("connect to %s: %v", addr, err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// kernelInVM runs TestNetnsKernel inside qemu (see vmtest): the guest is
// this package's test binary built static, with a static poled appended to the
// initramfs as /bin/poled.
func kernelInVM(t *testing.T, why error) {
	t.Logf("this kernel cannot run netem (%v): running the test in a VM", why)
	missing := func(what, pkg string) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing (Debian package %s)", what, pkg)
		}
		t.Skipf("%s missing: apt-get install %s", what, pkg)
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		missing("qemu-system-x86_64", "qemu-system-x86")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		missing("busybox", "busybox-static")
	}
	k, err := vmtest.FindKernel("/boot", "/lib/modules", "")
	if err != nil {
		missing(fmt.Sprintf("a cloud kernel (%v)", err), "linux-image-cloud-amd64")
	}
	dir := t.TempDir()
	t0 := time.Now()
	build := func(args ...string) {
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	guest, poled := filepath.Join(dir, "netns.test"), filepath.Join(dir, "poled")
	build("test", "-c", "-o", guest, ".")
	build("build", "-o", poled, "../../cmd/poled")
	poledBytes, err := os.ReadFile(poled)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	var initrd bytes.Buffer
	img := vmtest.Image{
		Kernel: k, Modules: vmtest.Modules, Busybox: busybox, Guest: guest,
		GuestArgs: []string{"-test.run=^TestNetnsKernel$", "-test.v", "-test.count=1", "-netns.poled=/bin/poled", "-netns.vm"},
		CacheDir:  filepath.Join(cache, "polebench", "vmtest"),
	}
	if err := vmtest.WriteInitramfs(t.Context(), &initrd, img); err != nil {
		t.Fatal(err)
	}
	// The kernel unpacks concatenated archives in order: the second adds poled.
	extra := vmtest.NewInitramfs(&initrd)
	extra.File("bin/poled", 0o755, poledBytes)
	if err := extra.Close(); err != nil {
		t.Fatal(err)
	}
	initrdPath := filepath.Join(dir, "initramfs.cpio")
	if err := os.WriteFile(initrdPath, initrd.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("TIMING guest and initramfs (%d MB) built in %v", initrd.Len()>>20, time.Since(t0).Round(time.Millisecond))

	accel, how := vmtest.DetectAccel()
	vm := vmtest.VM{Kernel: k.Image, Initrd: initrdPath, MemoryMB: 1024, CPUs: 1, Accel: accel, ICount: true}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	boot := time.Duration(0)
	if accel == "kvm" {
		boot = 20 * time.Second
	}
	t.Logf("accel %s (%s)", accel, how)
	res, err := vm.Run(ctx, clustertest.Writer{T: t}, boot)
	if err != nil && accel == "kvm" {
		t.Logf("kvm: %v; retrying with tcg", err)
		vm.Accel = "tcg"
		res, err = vm.Run(ctx, clustertest.Writer{T: t}, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("TIMING VM ran %v (accel %s)", res.Elapsed.Round(100*time.Millisecond), vm.Accel)
	if !res.Passed {
		t.Fatalf("TestNetnsKernel in the VM: %q", res.Verdict)
	}
}
