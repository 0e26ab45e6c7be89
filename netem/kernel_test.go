package netem

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// testNet is two fresh namespaces joined by a veth pair: "a" holds v0 (10.77.0.1, the
// server under test, p1) and "b" holds v1 with one address per remote server.
type testNet struct {
	a, b  netns.NsHandle
	addrs map[int]netip.Addr
}

func newTestNet(t *testing.T, remote map[int]string) *testNet {
	t.Helper()
	needRoot(t)
	n := &testNet{addrs: map[int]netip.Addr{1: netip.MustParseAddr("10.77.0.1")}}
	var err error
	if n.a, err = newNamespace(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.a.Close() })
	if n.b, err = newNamespace(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.b.Close() })
	ha, err := netlink.NewHandleAt(n.a)
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Close()
	hb, err := netlink.NewHandleAt(n.b)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v0"}, PeerName: "v1", PeerNamespace: netlink.NsFd(n.b)}
	if err := ha.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	up := func(h *netlink.Handle, name string, addrs ...string) {
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if err := h.AddrAdd(l, &netlink.Addr{IPNet: mustCIDR(t, a+"/24")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	up(ha, "v0", "10.77.0.1")
	var bAddrs []string
	for id, a := range remote {
		n.addrs[id] = netip.MustParseAddr(a)
		bAddrs = append(bAddrs, a)
	}
	up(hb, "v1", bAddrs...)
	return n
}

func mustCIDR(t *testing.T, s string) *net.IPNet {
	ip, ipnet, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	ipnet.IP = ip
	return ipnet
}

// sendUDP sends count datagrams of size bytes from namespace ns to addr:9 (discard).
func sendUDP(t *testing.T, ns netns.NsHandle, addr netip.Addr, count, size int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		// Unconnected, so the ICMP port-unreachable answers do not fail the writes.
		c, err := net.ListenUDP("udp", nil)
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for range count {
			if _, err := c.WriteToUDPAddrPort(buf, netip.AddrPortFrom(addr, 9)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// twoDCPlan: p1 (self) and p2 share a DC (0.05 ms one way), p3 and p4 sit 10 ms away.
func twoDCPlan() Plan {
	var links []Link
	for a := 1; a <= 4; a++ {
		for b := 1; b <= 4; b++ {
			if a == b {
				continue
			}
			d := 10 * time.Millisecond
			if (a <= 2) == (b <= 2) {
				d = 50 * time.Microsecond
			}
			links = append(links, Link{From: a, To: b, Delay: d, Jitter: d / 50, Dist: DistPareto})
		}
	}
	return Plan{Links: links, Seed: 1}
}

func classBytes(t *testing.T, c *conn) map[uint32]uint64 {
	t.Helper()
	cls, err := c.h.ClassList(c.link, rootHandle)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]uint64{}
	for _, cl := range cls {
		out[cl.Attrs().Handle] = cl.Attrs().Statistics.Basic.Bytes
	}
	return out
}

// TestTreeClassifiesTraffic installs the htb root, classes and u32 filters (everything
// but the netem leaves, which this kernel may lack) and checks, with real packets,
// that each destination lands in its class; then that a second apply changes nothing,
// that a new plan converges, and that Clear removes exactly our root.
func TestTreeClassifiesTraffic(t *testing.T) {
	n := newTestNet(t, map[int]string{2: "10.77.0.2", 3: "10.77.0.3", 4: "10.77.0.4"})
	tg := Target{NS: n.a, Dev: "v0", Self: 1, Addrs: n.addrs}
	p := twoDCPlan()
	s, err := spec(tg, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Leaves) != 2 || len(s.Filters) != 3 {
		t.Fatalf("spec has %d leaves, %d filters; want 2 (same DC, remote DC), 3", len(s.Leaves), len(s.Filters))
	}
	c, err := dial(tg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx := context.Background()
	if err := c.apply(ctx, s, false); err != nil {
		t.Fatal(err)
	}
	if err := c.verify(s, false); err != nil {
		t.Fatal(err)
	}

	// Real packets: 10 x 1000 B to p2 (same DC class), 20 x 1000 B to p3 and p4 (remote class).
	sendUDP(t, n.a, n.addrs[2], 10, 1000)
	sendUDP(t, n.a, n.addrs[3], 10, 1000)
	sendUDP(t, n.a, n.addrs[4], 10, 1000)
	got := classBytes(t, c)
	near, far := s.Leaves[0].Class, s.Leaves[1].Class
	if s.Leaves[0].Params.Latency > s.Leaves[1].Params.Latency {
		near, far = far, near
	}
	// Each datagram is 1000 B of payload plus 28 B of IP/UDP headers plus 14 B Ethernet.
	if b := got[near]; b < 10*1028 || b > 10*1100 {
		t.Errorf("same-DC class %s carried %d bytes; want 10 datagrams", handleString(near), b)
	}
	if b := got[far]; b < 20*1028 || b > 20*1100 {
		t.Errorf("remote class %s carried %d bytes; want 20 datagrams", handleString(far), b)
	}
	if b := got[netlink.MakeHandle(rootMajor, defaultMinor)]; b >= 1000 {
		t.Errorf("default class carried %d bytes; only ARP should go there", b)
	}

	// Idempotent: applying again leaves the very same filters (same kernel handles).
	before := filterHandles(t, c)
	if err := c.apply(ctx, s, false); err != nil {
		t.Fatal(err)
	}
	if err := c.verify(s, false); err != nil {
		t.Fatal(err)
	}
	if after := filterHandles(t, c); after != before {
		t.Errorf("re-apply rewrote filters: %s -> %s", before, after)
	}

	// A new plan: p4 moves to its own DC 30 ms away. Three classes, p4 re-filtered.
	p2 := p
	for i, l := range p2.Links {
		if (l.From == 4) != (l.To == 4) && !(l.From <= 2 && l.To <= 2) {
			p2.Links[i].Delay, p2.Links[i].Jitter = 30*time.Millisecond, 600*time.Microsecond
		}
	}
	s2, err := spec(tg, p2)
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Leaves) != 3 {
		t.Fatalf("new plan: %d leaves, want 3", len(s2.Leaves))
	}
	if err := c.apply(ctx, s2, false); err != nil {
		t.Fatal(err)
	}
	if err := c.verify(s2, false); err != nil {
		t.Fatal(err)
	}
	// Back to the first plan: the third class must go.
	if err := c.apply(ctx, s, false); err != nil {
		t.Fatal(err)
	}
	if err := c.verify(s, false); err != nil {
		t.Fatal(err)
	}

	out, err := Show(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Show:\n%s", out)
	for _, want := range []string{"root htb 9e: default 9e:1", "class 9e:1 no delay (default)", "<- 10.77.0.3 10.77.0.4"} {
		if !strings.Contains(out, want) {
			t.Errorf("Show lacks %q", want)
		}
	}

	if err := Clear(ctx, tg); err != nil {
		t.Fatal(err)
	}
	root, _, err := c.root()
	if err != nil {
		t.Fatal(err)
	}
	if ours(root) {
		t.Fatal("Clear left our root")
	}
	if err := Clear(ctx, tg); err != nil {
		t.Errorf("second Clear: %v", err)
	}
	if out, _ := Show(ctx, tg); !strings.Contains(out, "not installed by polebench") {
		t.Errorf("Show after Clear: %q", out)
	}
}

func filterHandles(t *testing.T, c *conn) string {
	t.Helper()
	fs, err := c.h.FilterList(c.link, rootHandle)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, f := range fs {
		hs = append(hs, fmt.Sprintf("%d/%x", f.Attrs().Priority, f.Attrs().Handle))
	}
	return strings.Join(hs, ",")
}

// TestClearLeavesForeignRoot: a root qdisc someone else installed is not ours to delete.
func TestClearLeavesForeignRoot(t *testing.T) {
	n := newTestNet(t, map[int]string{2: "10.77.0.2"})
	tg := Target{NS: n.a, Dev: "v0", Self: 1, Addrs: n.addrs}
	h, err := netlink.NewHandleAt(n.a)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName("v0")
	if err != nil {
		t.Fatal(err)
	}
	foreign := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	if err := h.QdiscAdd(foreign); err != nil {
		t.Fatal(err)
	}
	if err := Clear(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range qs {
		found = found || (q.Attrs().Parent == netlink.HANDLE_ROOT && q.Attrs().Handle == netlink.MakeHandle(1, 0))
	}
	if !found {
		t.Error("Clear deleted a root qdisc it did not install")
	}
	out, err := Show(context.Background(), tg)
	if err != nil || !strings.Contains(out, "root htb 1: (not installed by polebench)") {
		t.Errorf("Show = %q, %v", out, err)
	}
}

// TestApply runs the public Apply end to end: with sch_netem it must install and
// verify the whole tree (twice: idempotent); without, it must fail naming the module.
func TestApply(t *testing.T) {
	n := newTestNet(t, map[int]string{2: "10.77.0.2", 3: "10.77.0.3", 4: "10.77.0.4"})
	tg := Target{NS: n.a, Dev: "v0", Self: 1, Addrs: n.addrs}
	ctx := context.Background()
	defer Clear(ctx, tg)
	err := Apply(ctx, tg, twoDCPlan())
	if !kernelHasNetem(t) {
		if err == nil || !strings.Contains(err.Error(), "is module sch_netem available?") {
			t.Fatalf("Apply without sch_netem = %v; want an error naming the module", err)
		}
		t.Logf("without sch_netem, as expected: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, tg, twoDCPlan()); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	out, err := Show(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Show:\n%s", out)
	if !strings.Contains(out, "delay 10ms jitter 200µs pareto") {
		t.Errorf("Show lacks the remote leaf")
	}
}

func TestApplyRejectsBadTargets(t *testing.T) {
	ctx := context.Background()
	p := twoDCPlan()
	noAddr := Target{Dev: "v0", Self: 1, Addrs: map[int]netip.Addr{2: netip.MustParseAddr("10.0.0.2")}}
	if err := Apply(ctx, noAddr, p); err == nil || !strings.Contains(err.Error(), "no address for p3") {
		t.Errorf("missing address: %v", err)
	}
	stranger := Target{Dev: "v0", Self: 9}
	if err := Apply(ctx, stranger, p); err == nil || !strings.Contains(err.Error(), "no link from p9") {
		t.Errorf("unknown self: %v", err)
	}
	bad := p
	bad.Links = append([]Link(nil), p.Links...)
	bad.Links[0].Dist = "gamma"
	if err := Apply(ctx, Target{Self: 1}, bad); err == nil || !strings.Contains(err.Error(), "gamma") {
		t.Errorf("bad plan: %v", err)
	}
	if os.Geteuid() == 0 {
		n := newTestNet(t, nil)
		if err := Apply(ctx, Target{NS: n.a, Dev: "nosuch0", Self: 1, Addrs: map[int]netip.Addr{
			2: netip.MustParseAddr("10.0.0.2"), 3: netip.MustParseAddr("10.0.0.3"), 4: netip.MustParseAddr("10.0.0.4")}}, p); err == nil || !strings.Contains(err.Error(), `interface "nosuch0"`) {
			t.Errorf("missing interface: %v", err)
		}
	}
}
