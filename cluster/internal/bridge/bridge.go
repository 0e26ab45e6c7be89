// Package bridge is the network of a netns cluster: a namespace per server, each
// plugged by a veth into a Linux bridge in a switch namespace of its own, which the host
// reaches by one veth; the processes started inside those namespaces; and what finds
// and removes the namespaces, links and processes a crashed harness left. The netns
// backend builds its clusters on it, the ZooKeeper flavor runs its JVMs in it, and the
// docker backend plugs its containers into it.
package bridge

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/cluster"
)

// The netns backend's network, for a cluster labelled L with servers 1..N:
//
//	host namespace          switch namespace pb-L-sw        server namespace pb-L-p<ID>
//	pb<hash(L)>  ─veth─  host ┐                              (one per server)
//	10.215.k.1/24             ├─ bridge br0 ─ p<ID> ─veth─ eth0 10.215.k.(10+ID)/24
//
// The bridge lives in its own namespace, not in the host's: with br_netfilter loaded
// (Docker loads it) bridged frames go through the host's iptables FORWARD chain, whose
// policy Docker sets to DROP, so servers on a host bridge could not reach each other.
// A fresh namespace has an empty firewall. The host keeps one veth with an address in
// the cluster's /24, so the harness reaches every server directly. Namespaces are named
// (bind-mounted under /run/netns, so `ip netns` lists them) and the host veth carries
// the label in its alias: Down finds both after a crash.
const (
	nsDir       = "/run/netns"
	namePrefix  = "pb-"
	switchName  = "sw"
	aliasPrefix = "polebench-netns:"
	bridgeName  = "br0"
	uplinkName  = "host" // the switch's end of the host veth
	hostOctet   = 1
	firstOctet  = 10 // server id i gets .(10+i)
)

const (
	Dev        = "eth0" // a server's end of its veth
	MaxServers = 240    // servers of one cluster, on its /24
)

// subnets is where cluster subnets come from: 10.215.k.0/24.
var subnets = netip.MustParsePrefix("10.215.0.0/16")

// CheckLabel is cluster.CheckLabel, said by the netns backend: a label names the
// namespaces of its cluster.
func CheckLabel(label string) error {
	if err := cluster.CheckLabel(label); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	return nil
}

// errNotRoot is why a process cannot build the network without root.
var errNotRoot = errors.New("the netns backend needs root (network namespaces and veth pairs): run as root or use --backend local")

// CheckRoot says why this process cannot build the network: it is not root.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	return nil
}

// Name is the namespace of server id of the cluster labelled label; id 0 is the
// switch's.
func Name(label string, id int) string {
	if id == 0 {
		return namePrefix + label + "-" + switchName
	}
	return namePrefix + label + "-p" + strconv.Itoa(id)
}

// parseName splits a namespace name made by Name; id 0 is the switch.
func parseName(name string) (label string, id int, ok bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return "", 0, false
	}
	if l, ok := strings.CutSuffix(rest, "-"+switchName); ok {
		return l, 0, CheckLabel(l) == nil
	}
	i := strings.LastIndex(rest, "-p")
	if i < 0 {
		return "", 0, false
	}
	id, err := strconv.Atoi(rest[i+2:])
	if err != nil || id < 1 || strconv.Itoa(id) != rest[i+2:] {
		return "", 0, false
	}
	return rest[:i], id, CheckLabel(rest[:i]) == nil
}

// hostVeth is the host's interface of a cluster: interface names are at most 15
// bytes, so it carries a hash of the label (the alias carries the label itself).
func hostVeth(label string) string {
	sum := sha256.Sum256([]byte(label))
	return "pb" + strings.ToLower(base32.StdEncoding.EncodeToString(sum[:])[:10])
}

func alias(label string) string { return aliasPrefix + label }

// Net is the network of one cluster.
type Net struct {
	label  string
	Prefix netip.Prefix // the cluster's /24; the host is .1, server id is .(10+id)
	sw     netns.NsHandle
	NS     map[int]netns.NsHandle // server namespaces the Net made, by id
	Addrs  map[int]netip.Addr     // server addresses, by id
}

// HostAddr is the host's address on the cluster's subnet.
func (n *Net) HostAddr() netip.Addr { return octet(n.Prefix, hostOctet) }

// ServerAddr is server id's address on the cluster's subnet.
func (n *Net) ServerAddr(id int) netip.Addr { return octet(n.Prefix, firstOctet+id) }

func octet(p netip.Prefix, last int) netip.Addr {
	a := p.Addr().As4()
	a[3] = byte(last)
	return netip.AddrFrom4(a)
}

// OnThread runs f on a locked OS thread and then puts the thread back into its
// original network namespace, so a namespace change inside f never leaks into other
// goroutines. If that fails the thread stays locked and the runtime retires it with
// the goroutine. (Never leave this to thread retirement alone: when the goroutine
// happens to run on the main thread, the runtime parks that thread instead, and the
// whole process then shows as inside the namespace in /proc/PID/ns/net.)
func OnThread(f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			ch <- fmt.Errorf("current network namespace: %w", err)
			return
		}
		defer orig.Close()
		err = f()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// newNamed creates namespace name, bind-mounted under /run/netns.
func newNamed(name string) (netns.NsHandle, error) {
	ns := netns.None()
	err := OnThread(func() error {
		var err error
		ns, err = netns.NewNamed(name)
		return err
	})
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return ns, fmt.Errorf("network namespace %s already exists (a running cluster with this label, or leftovers: polebench cluster down): %w", name, err)
		}
		return ns, fmt.Errorf("create network namespace %s: %w", name, err)
	}
	return ns, nil
}

// deleteNamed unmounts and removes a named namespace (false: there was none); the
// kernel frees it once no process or handle holds it.
func deleteNamed(name string) (bool, error) {
	path := filepath.Join(nsDir, name)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	// EINVAL: not a mount point (a half-made namespace); the file still goes.
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return false, fmt.Errorf("unmount network namespace %s: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove network namespace %s: %w", name, err)
	}
	return true, nil
}

// Inode is the namespace's identity, as /proc/PID/ns/net shows it.
func Inode(ns netns.NsHandle) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(ns), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// chooseSubnet picks a /24 of subnets, starting at one derived from the label,
// that overlaps no route (any table) and no address of the host namespace.
func chooseSubnet(h *netlink.Handle, label string) (netip.Prefix, error) {
	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("list host routes: %w", err)
	}
	var used []netip.Prefix
	for _, r := range routes {
		if r.Dst != nil {
			if p, ok := prefixOf(r.Dst); ok {
				used = append(used, p)
			}
		}
	}
	addrs, err := h.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("list host addresses: %w", err)
	}
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok {
			used = append(used, p)
		}
	}
	sum := sha256.Sum256([]byte(label))
	base := subnets.Addr().As4()
	for i := range 256 {
		b := base
		b[2] = sum[0] + byte(i)
		p := netip.PrefixFrom(netip.AddrFrom4(b), 24)
		free := true
		for _, u := range used {
			if u.Bits() > 0 && u.Overlaps(p) {
				free = false
				break
			}
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free /24 in %s: every one overlaps a host route", subnets)
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones).Masked(), true
}

// lock serialises subnet choice between harness processes: the lock is held until
// the new subnet's route exists.
func lock() (unlock func(), err error) {
	f, err := os.OpenFile("/run/polebench-netns.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// Create builds the network of a cluster with servers ids. On error it removes
// what it made, and only that.
func Create(label string, ids []int) (_ *Net, err error) {
	found, err := List()
	if err != nil {
		return nil, err
	}
	for _, f := range found {
		if f.Label == label {
			return nil, fmt.Errorf("network namespace %s exists: a netns cluster labelled %q is running, or left over (polebench cluster down %s)", f.Name, label, label)
		}
	}
	n := &Net{label: label, sw: netns.None(), NS: map[int]netns.NsHandle{}, Addrs: map[int]netip.Addr{}}
	var made []string
	madeHostVeth := false
	defer func() {
		if err != nil {
			n.Close()
			_, tdErr := Teardown(label, made, madeHostVeth)
			err = errors.Join(err, tdErr)
		}
	}()
	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	defer host.Close()

	if n.sw, err = newNamed(Name(label, 0)); err != nil {
		return nil, err
	}
	made = append(made, Name(label, 0))
	sw, err := netlink.NewHandleAt(n.sw, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", Name(label, 0), err)
	}
	defer sw.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName}}
	if err := sw.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("create bridge in %s: %w", Name(label, 0), err)
	}
	if err := up(sw, bridgeName, "lo"); err != nil {
		return nil, err
	}

	unlock, err := lock()
	if err != nil {
		return nil, err
	}
	madeHostVeth = true
	err = n.uplink(host, sw, br)
	unlock()
	if err != nil {
		return nil, err
	}

	for _, id := range ids {
		made = append(made, Name(label, id))
		if err := n.server(sw, br, id); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// uplink connects the host to the bridge; the caller holds lock.
func (n *Net) uplink(host, sw *netlink.Handle, br netlink.Link) error {
	var err error
	if n.Prefix, err = chooseSubnet(host, n.label); err != nil {
		return err
	}
	name := hostVeth(n.label)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: uplinkName, PeerNamespace: netlink.NsFd(n.sw)}
	if err := host.LinkAdd(veth); err != nil {
		return fmt.Errorf("create host veth %s: %w", name, err)
	}
	// The kernel ignores an alias in the create request.
	if err := host.LinkSetAlias(veth, alias(n.label)); err != nil {
		return fmt.Errorf("label host veth %s: %w", name, err)
	}
	if err := attach(sw, uplinkName, br); err != nil {
		return err
	}
	if err := addAddr(host, name, netip.PrefixFrom(n.HostAddr(), 24)); err != nil {
		return err
	}
	return up(host, name)
}

// server makes server id's namespace and connects it to the bridge.
func (n *Net) server(sw *netlink.Handle, br netlink.Link, id int) error {
	ns, err := newNamed(Name(n.label, id))
	if err != nil {
		return err
	}
	n.NS[id] = ns
	return n.plug(sw, br, id, ns, Name(n.label, id))
}

// plug connects namespace ns (what names it, for errors) to the bridge as server id:
// a veth whose switch end is p<ID> and whose other end is eth0 in ns, with the
// server's address. A p<ID> left from an earlier namespace of the server (one that is
// still being torn down) is replaced.
func (n *Net) plug(sw *netlink.Handle, br netlink.Link, id int, ns netns.NsHandle, what string) error {
	port := "p" + strconv.Itoa(id)
	if old, err := sw.LinkByName(port); err == nil {
		if err := sw.LinkDel(old); err != nil {
			return fmt.Errorf("remove stale veth %s: %w", port, err)
		}
	}
	addr := octet(n.Prefix, firstOctet+id)
	// The MAC is the address's (as Docker does): a restarted container's new eth0 keeps
	// it, so neighbours' ARP entries stay right instead of pointing at the dead one's
	// for the 15-45 s until they go stale.
	a4 := addr.As4()
	mac := net.HardwareAddr{0x02, 0x50, a4[0], a4[1], a4[2], a4[3]}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: Dev, PeerHardwareAddr: mac, PeerNamespace: netlink.NsFd(ns)}
	if err := sw.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s for %s: %w", port, what, err)
	}
	if err := attach(sw, port, br); err != nil {
		return err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", what, err)
	}
	defer h.Close()
	if err := addAddr(h, Dev, netip.PrefixFrom(addr, 24)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := up(h, "lo", Dev); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	n.Addrs[id] = addr
	return nil
}

// PlugForeign connects a namespace the cluster does not own (a container's) as
// server id; the caller keeps and closes ns.
func (n *Net) PlugForeign(id int, ns netns.NsHandle, what string) error {
	sw, err := netlink.NewHandleAt(n.sw, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", Name(n.label, 0), err)
	}
	defer sw.Close()
	br, err := sw.LinkByName(bridgeName)
	if err != nil {
		return fmt.Errorf("bridge in %s: %w", Name(n.label, 0), err)
	}
	return n.plug(sw, br, id, ns, what)
}

func attach(h *netlink.Handle, name string, br netlink.Link) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("interface %s: %w", name, err)
	}
	if err := h.LinkSetMaster(l, br); err != nil {
		return fmt.Errorf("attach %s to %s: %w", name, bridgeName, err)
	}
	return up(h, name)
}

func up(h *netlink.Handle, names ...string) error {
	for _, name := range names {
		l, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("interface %s: %w", name, err)
		}
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", name, err)
		}
	}
	return nil
}

func addAddr(h *netlink.Handle, name string, p netip.Prefix) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("interface %s: %w", name, err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}
	if err := h.AddrAdd(l, a); err != nil {
		return fmt.Errorf("address %s on %s: %w", p, name, err)
	}
	return nil
}

// Close closes the Net's handles to its namespaces; Teardown removes them.
func (n *Net) Close() {
	for _, ns := range n.NS {
		ns.Close()
	}
	if n.sw.IsOpen() {
		n.sw.Close()
	}
	n.sw = netns.None()
	n.NS = map[int]netns.NsHandle{}
}

// Teardown removes namespaces names of cluster label and, with withHostVeth, the
// host's veth, and says what it removed. Links in the switch namespace go first, so
// that nothing waits for the kernel's asynchronous namespace cleanup. Missing pieces
// are fine: it also cleans half-made networks and leftovers of a crash.
func Teardown(label string, names []string, withHostVeth bool) (removed []string, _ error) {
	var errs []error
	if withHostVeth {
		if host, err := netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			errs = append(errs, fmt.Errorf("netlink: %w", err))
		} else {
			if l, err := host.LinkByName(hostVeth(label)); err == nil && l.Attrs().Alias == alias(label) {
				if err := host.LinkDel(l); err != nil {
					errs = append(errs, fmt.Errorf("delete host veth %s: %w", l.Attrs().Name, err))
				} else {
					removed = append(removed, "host veth "+l.Attrs().Name)
				}
			}
			host.Close()
		}
	}
	swName := Name(label, 0)
	if slices.Contains(names, swName) {
		links, err := flush(swName)
		removed = append(removed, links...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range names {
		ok, err := deleteNamed(name)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			removed = append(removed, "namespace "+name)
		}
	}
	return removed, errors.Join(errs...)
}

// flush deletes every link but lo in namespace name (the bridge, its ports).
func flush(name string) (removed []string, _ error) {
	ns, err := netns.GetFromPath(filepath.Join(nsDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", name, err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links in %s: %w", name, err)
	}
	var errs []error
	for _, l := range links {
		if l.Attrs().Name == "lo" {
			continue
		}
		// Deleting one end of a veth deletes the other: ENODEV is a peer already gone.
		if err := h.LinkDel(l); err == nil {
			removed = append(removed, fmt.Sprintf("%s %s in %s", l.Type(), l.Attrs().Name, name))
		} else if !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", l.Attrs().Name, name, err))
		}
	}
	return removed, errors.Join(errs...)
}

// Found is one namespace of ours under /run/netns.
type Found struct {
	Name, Label string
	ID          int // 0: the switch
}

// List lists the namespaces of every netns cluster on this machine.
func List() ([]Found, error) {
	ents, err := os.ReadDir(nsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", nsDir, err)
	}
	var out []Found
	for _, e := range ents {
		if label, id, ok := parseName(e.Name()); ok {
			out = append(out, Found{e.Name(), label, id})
		}
	}
	return out, nil
}
