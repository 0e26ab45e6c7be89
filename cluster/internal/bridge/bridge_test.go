package bridge

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// needRoot skips without root, except in CI, where the bridge must be tested.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("the bridge's tests need root (CI runs them as root)")
	}
	t.Skip("the bridge's tests need root")
}

func TestNames(t *testing.T) {
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
		label, id, ok := parseName(tc.name)
		if ok != tc.ok || (ok && (label != tc.label || id != tc.id)) {
			t.Errorf("parseName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, label, id, ok, tc.label, tc.id, tc.ok)
		}
		if ok && Name(label, id) != tc.name {
			t.Errorf("Name(%q, %d) = %q, want %q", label, id, Name(label, id), tc.name)
		}
	}
	for _, label := range []string{"", "-x", "a b", "a/b", strings.Repeat("x", 64)} {
		if CheckLabel(label) == nil {
			t.Errorf("label %q accepted", label)
		}
	}
	long := strings.Repeat("x", 63)
	if err := CheckLabel(long); err != nil {
		t.Error(err)
	}
	if v := hostVeth(long); len(v) > 15 || v == hostVeth(long[1:]) {
		t.Errorf("host veth name %q: too long, or not label-specific", v)
	}
}

// TestChooseSubnet: a /24 that a route already covers is never chosen.
func TestChooseSubnet(t *testing.T) {
	needRoot(t)
	var ns netns.NsHandle
	if err := OnThread(func() (err error) { ns, err = netns.New(); return err }); err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	first, err := chooseSubnet(h, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !subnets.Contains(first.Addr()) || first.Bits() != 24 {
		t.Fatalf("chose %s, outside %s", first, subnets)
	}
	// Take the first choice with a route in another table, and the next one with an
	// address.
	dummy := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "d0"}, PeerName: "d1"}
	if err := h.LinkAdd(dummy); err != nil {
		t.Fatal(err)
	}
	if err := up(h, "d0", "d1"); err != nil {
		t.Fatal(err)
	}
	next := first.Addr().As4()
	next[2]++ // the chooser's next candidate (wrapping within the /16, as it does)
	second := netip.PrefixFrom(netip.AddrFrom4(next), 24)
	if err := addAddr(h, "d0", netip.PrefixFrom(octet(second, 7), 24)); err != nil {
		t.Fatal(err)
	}
	route := &netlink.Route{LinkIndex: dummy.Attrs().Index, Table: 100,
		Dst: &net.IPNet{IP: first.Addr().AsSlice(), Mask: net.CIDRMask(24, 32)}}
	if err := h.RouteAdd(route); err != nil {
		t.Fatal(err)
	}
	got, err := chooseSubnet(h, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got.Overlaps(first) || got.Overlaps(second) || !subnets.Contains(got.Addr()) {
		t.Fatalf("chose %s, though %s (route in table 100) and %s (address) are taken", got, first, second)
	}
}
