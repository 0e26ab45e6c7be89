package main

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The lab: one network namespace per server, each with a veth "eth0" whose peer is
// a port of one bridge in the VM's root namespace. All made with netlink.
const (
	dev    = "eth0"
	bridge = "vmtbr0"
)

type node struct {
	id   int
	ns   netns.NsHandle
	h    *netlink.Handle // netlink socket inside ns
	addr netip.Addr
}

type lab struct {
	nodes []*node // by id order
	br    netlink.Link
}

// addrOf is server id's address: 10.99.0.id/24 (only ever inside the VM).
func addrOf(id int) netip.Addr { return netip.AddrFrom4([4]byte{10, 99, 0, byte(id)}) }

func newLab(ids []int) (_ *lab, err error) {
	l := &lab{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	// NewLinkAttrs leaves the queue length to the kernel (a zero LinkAttrs asks for 0).
	attrs := netlink.NewLinkAttrs()
	attrs.Name = bridge
	l.br = &netlink.Bridge{LinkAttrs: attrs}
	if err := netlink.LinkAdd(l.br); err != nil {
		return nil, fmt.Errorf("add bridge %s: %w", bridge, err)
	}
	if err := netlink.LinkSetUp(l.br); err != nil {
		return nil, fmt.Errorf("bridge %s up: %w", bridge, err)
	}
	for _, id := range ids {
		if id < 1 || id > 254 {
			return nil, fmt.Errorf("server id %d does not fit 10.99.0.0/24", id)
		}
		n := &node{id: id, addr: addrOf(id)}
		if n.ns, err = newNS(); err != nil {
			return nil, fmt.Errorf("p%d: new namespace: %w", id, err)
		}
		l.nodes = append(l.nodes, n)
		if n.h, err = netlink.NewHandleAt(n.ns, unix.NETLINK_ROUTE); err != nil {
			return nil, fmt.Errorf("p%d: netlink in namespace: %w", id, err)
		}
		port := fmt.Sprintf("vt%d", id)
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.MasterIndex = port, l.br.Attrs().Index
		veth := &netlink.Veth{
			LinkAttrs:     attrs,
			PeerName:      dev,
			PeerTxQLen:    -1,
			PeerNamespace: netlink.NsFd(n.ns),
		}
		if err := netlink.LinkAdd(veth); err != nil {
			return nil, fmt.Errorf("p%d: add veth %s/%s: %w", id, port, dev, err)
		}
		if err := netlink.LinkSetUp(veth); err != nil {
			return nil, fmt.Errorf("p%d: %s up: %w", id, port, err)
		}
		if err := n.up(); err != nil {
			return nil, fmt.Errorf("p%d: %w", id, err)
		}
	}
	return l, nil
}

// up configures the namespace side: lo and eth0 up, eth0 addressed.
func (n *node) up() error {
	lo, err := n.h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := n.h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	eth, err := n.h.LinkByName(dev)
	if err != nil {
		return err
	}
	pfx := netip.PrefixFrom(n.addr, 24)
	ipnet := &net.IPNet{IP: n.addr.AsSlice(), Mask: net.CIDRMask(pfx.Bits(), 32)}
	if err := n.h.AddrAdd(eth, &netlink.Addr{IPNet: ipnet}); err != nil {
		return fmt.Errorf("address %v on %s: %w", pfx, dev, err)
	}
	if err := n.h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("%s up: %w", dev, err)
	}
	return nil
}

func (l *lab) addrs() map[int]netip.Addr {
	m := map[int]netip.Addr{}
	for _, n := range l.nodes {
		m[n.id] = n.addr
	}
	return m
}

func (l *lab) node(id int) *node {
	for _, n := range l.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// close removes the bridge and the veths (a veth dies with its peer) and lets the
// namespaces go once nothing else holds them.
func (l *lab) close() {
	for _, n := range l.nodes {
		if n.h != nil {
			if link, err := n.h.LinkByName(dev); err == nil {
				_ = n.h.LinkDel(link)
			}
			n.h.Close()
		}
		n.ns.Close()
	}
	if l.br != nil {
		_ = netlink.LinkDel(l.br)
	}
}

// tcState describes every qdisc, class and filter on a node's eth0, one per line,
// sorted: equal before Apply and after Clear means Clear left nothing behind.
func (n *node) tcState() (string, error) {
	link, err := n.h.LinkByName(dev)
	if err != nil {
		return "", err
	}
	var lines []string
	qs, err := n.h.QdiscList(link)
	if err != nil {
		return "", fmt.Errorf("list qdiscs: %w", err)
	}
	parents := []uint32{}
	for _, q := range qs {
		a := q.Attrs()
		lines = append(lines, fmt.Sprintf("qdisc %s handle %s parent %s", q.Type(), netlink.HandleStr(a.Handle), netlink.HandleStr(a.Parent)))
		if a.Handle != 0 {
			parents = append(parents, a.Handle)
		}
	}
	cs, err := n.h.ClassList(link, 0)
	if err != nil {
		return "", fmt.Errorf("list classes: %w", err)
	}
	for _, c := range cs {
		a := c.Attrs()
		lines = append(lines, fmt.Sprintf("class %s handle %s parent %s", c.Type(), netlink.HandleStr(a.Handle), netlink.HandleStr(a.Parent)))
		parents = append(parents, a.Handle)
	}
	for _, p := range parents {
		fs, err := n.h.FilterList(link, p)
		if err != nil {
			return "", fmt.Errorf("list filters of %s: %w", netlink.HandleStr(p), err)
		}
		for _, f := range fs {
			a := f.Attrs()
			lines = append(lines, fmt.Sprintf("filter %s parent %s prio %d handle %s", f.Type(), netlink.HandleStr(a.Parent), a.Priority, netlink.HandleStr(a.Handle)))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}

// newNS makes a network namespace without moving the caller: the work happens on a
// thread of its own, which is thrown away if it cannot be moved back.
func newNS() (netns.NsHandle, error) {
	var ns netns.NsHandle
	err := onThread(func() error {
		var err error
		ns, err = netns.New()
		return err
	})
	return ns, err
}

// inNS runs f with the calling thread in ns; sockets f opens stay in ns for life.
func inNS(ns netns.NsHandle, f func() error) error {
	return onThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("enter namespace: %w", err)
		}
		return f()
	})
}

// onThread runs f on a locked OS thread and restores the thread's namespace after.
// If that fails the thread stays locked and the runtime ends it with the goroutine.
func onThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("restore namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
