package netem

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The tree Apply installs on one interface (handles in tc's hex notation):
//
//	root htb 9e: default 1
//	├─ class 9e:1   no delay (everything the filters do not match: same DC, clients, ...)
//	├─ class 9e:10  ─ netem leaf 1010:  (one class per distinct remote link)
//	├─ class 9e:11  ─ netem leaf 1011:
//	└─ u32 filters on parent 9e:  ip dst <server addr>/32 → its class
//
// The root's major 9e marks the tree as ours: Clear deletes a root only when it is an
// htb with that handle. A leaf's major encodes its distribution (0x1000 pareto, 0x2000
// normal, 0x3000 paretonormal, 0x4000 uniform, plus the class index), because the
// kernel never reports the table back and keeps the old one when a change omits it:
// a new distribution therefore means a new leaf.

const (
	rootMajor    = 0x9e
	defaultMinor = 1
	firstMinor   = 0x10
	maxClasses   = 0x1000

	// HTB only classifies here: its classes get a rate no link reaches.
	htbRateBits = 100e9
	htbQuantum  = 100000

	// MinLimit is the smallest netem queue (packets). The limit is sized from the
	// bandwidth-delay product of limitBandwidth (or the link's rate) over delay plus
	// four jitters, in full-size packets, because every packet in flight waits in it.
	MinLimit       = 1000
	maxLimit       = 1 << 20
	limitBandwidth = 10e9 / 8 // bytes/s: 10 Gbit/s
	limitPacket    = 1500

	filterPrioV4 = 1
	filterPrioV6 = 2

	socketTimeout = 10 * time.Second
)

var rootHandle = netlink.MakeHandle(rootMajor, 0)

// Target says where Apply installs a plan: interface Dev in network namespace NS (a
// handle from netns.GetFromPid(pid), netns.GetFromPath("/proc/PID/ns/net") or
// netns.GetFromName; netns.None() or 0 means the caller's namespace), for server Self,
// reaching server i at Addrs[i]. The caller keeps NS open and closes it.
// The calling thread's namespace is never changed: sockets are opened inside NS.
type Target struct {
	NS    netns.NsHandle
	Dev   string
	Self  int
	Addrs map[int]netip.Addr
}

// leafSpec is one class and its netem leaf, shared by the servers with equal links.
type leafSpec struct {
	Class, Handle uint32
	Dist          string
	Params        netemParams
	Servers       []int
}

// filterSpec sends packets to one server's address into its class.
type filterSpec struct {
	Server int
	Addr   netip.Addr
	Class  uint32
}

type treeSpec struct {
	Leaves  []leafSpec
	Filters []filterSpec
}

// linkKey is what makes two links share a class: every field but the ends.
type linkKey struct {
	Delay, Jitter time.Duration
	Dist          string
	Rate          uint64
	Loss          float64
	rest          Link // the impairments (impair.go), ends and the fields above zeroed
}

func keyOf(l Link) linkKey {
	r := l
	r.From, r.To, r.Delay, r.Jitter, r.Dist, r.RateBytesPerSec, r.LossPct = 0, 0, 0, 0, "", 0, 0
	return linkKey{l.Delay, l.Jitter, l.Dist, l.RateBytesPerSec, l.LossPct, r}
}

// limitFor sizes a netem queue (see MinLimit), unless the link sets its own.
func limitFor(l Link) uint32 {
	if q := l.queueLimit(); q > 0 {
		return q
	}
	bw := float64(limitBandwidth)
	if l.RateBytesPerSec > 0 {
		bw = float64(l.RateBytesPerSec)
	}
	inFlight := bw * (l.Delay + 4*l.Jitter).Seconds() / limitPacket
	return uint32(min(max(inFlight, MinLimit), maxLimit))
}

// leafSeed derives a leaf's PRNG seed from the plan seed, so every run with one seed
// draws the same jitter and different leaves draw differently.
func leafSeed(planSeed int64, self int, k linkKey) uint64 {
	h := splitmix64(uint64(planSeed) ^ splitmix64(uint64(self)))
	h = splitmix64(h ^ uint64(k.Delay))
	h = splitmix64(h ^ uint64(k.Jitter))
	for _, c := range k.Dist {
		h = splitmix64(h ^ uint64(c))
	}
	return h
}

// spec computes the tree for tg.Self from p.
func spec(tg Target, p Plan) (treeSpec, error) {
	if err := p.Validate(); err != nil {
		return treeSpec{}, err
	}
	groups := map[linkKey][]int{}
	for _, l := range p.Links {
		if l.From != tg.Self {
			continue
		}
		k := keyOf(l)
		groups[k] = append(groups[k], l.To)
	}
	if len(groups) == 0 {
		return treeSpec{}, fmt.Errorf("the plan has no link from p%d", tg.Self)
	}
	if len(groups) > maxClasses {
		return treeSpec{}, fmt.Errorf("%d distinct links from p%d, at most %d", len(groups), tg.Self, maxClasses)
	}
	keys := make([]linkKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b linkKey) int {
		return cmp.Or(cmp.Compare(a.Delay, b.Delay), cmp.Compare(a.Jitter, b.Jitter),
			cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Rate, b.Rate), cmp.Compare(a.Loss, b.Loss),
			cmp.Compare(fmt.Sprint(a.rest), fmt.Sprint(b.rest)))
	})
	var s treeSpec
	for i, k := range keys {
		tab, err := table(k.Dist)
		if err != nil {
			return treeSpec{}, err
		}
		servers := groups[k]
		slices.Sort(servers)
		link, _ := p.Link(tg.Self, servers[0])
		params := link.params()
		params.Limit, params.Seed = limitFor(link), leafSeed(p.Seed, tg.Self, k)
		leaf := leafSpec{
			Class:   netlink.MakeHandle(rootMajor, uint16(firstMinor+i)),
			Handle:  netlink.MakeHandle(uint16(0x1000*(1+slices.Index(Dists, k.Dist))+i), 0),
			Dist:    k.Dist,
			Params:  params,
			Servers: servers,
		}
		if k.Jitter > 0 {
			leaf.Params.Table = tab // netem ignores a table without jitter; tc refuses it
		}
		s.Leaves = append(s.Leaves, leaf)
		for _, id := range servers {
			addr, ok := tg.Addrs[id]
			if !ok || !addr.IsValid() {
				return treeSpec{}, fmt.Errorf("no address for p%d (target of p%d's links)", id, tg.Self)
			}
			s.Filters = append(s.Filters, filterSpec{Server: id, Addr: addr.Unmap(), Class: leaf.Class})
		}
	}
	return s, nil
}

// conn is a netlink connection inside the target namespace: the library's handle for
// what it encodes well (htb, classes, u32), a raw socket for netem and qdisc dumps.
type conn struct {
	h    *netlink.Handle
	raw  map[int]*nl.SocketHandle
	link netlink.Link
}

func dial(tg Target) (*conn, error) {
	ns := tg.NS
	if ns <= 0 { // netns.None(), or a zero Target: fd 0 is never a namespace
		ns = netns.None()
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink handle in namespace %v: %w", tg.NS, err)
	}
	if err := h.SetSocketTimeout(socketTimeout); err != nil {
		h.Close()
		return nil, err
	}
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("netlink socket in namespace %v: %w", tg.NS, err)
	}
	c := &conn{h: h, raw: map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}}
	tv := unix.NsecToTimeval(int64(socketTimeout))
	if err := errors.Join(s.SetExtAck(true), s.SetSendTimeout(&tv), s.SetReceiveTimeout(&tv)); err != nil {
		c.close()
		return nil, err
	}
	if c.link, err = h.LinkByName(tg.Dev); err != nil {
		c.close()
		return nil, fmt.Errorf("interface %q: %w", tg.Dev, err)
	}
	return c, nil
}

func (c *conn) close() {
	c.h.Close()
	for _, s := range c.raw {
		s.Close()
	}
}

func (c *conn) ifindex() int { return c.link.Attrs().Index }

// qdiscInfo is one dumped qdisc.
type qdiscInfo struct {
	Kind           string
	Handle, Parent uint32
	HtbDefault     uint32 // htb only
	Netem          *dumpedNetem
}

// qdiscs dumps the qdiscs of the interface.
func (c *conn) qdiscs() ([]qdiscInfo, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
	req.Sockets = c.raw
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(c.ifindex())})
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
	if err != nil {
		return nil, fmt.Errorf("dump qdiscs: %w", err) // includes an interrupted dump
	}
	var out []qdiscInfo
	for _, m := range msgs {
		if len(m) < nl.SizeofTcMsg {
			return nil, fmt.Errorf("dump qdiscs: short message")
		}
		tcm := nl.DeserializeTcMsg(m)
		if int(tcm.Ifindex) != c.ifindex() {
			continue
		}
		q := qdiscInfo{Handle: tcm.Handle, Parent: tcm.Parent}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofTcMsg:])
		if err != nil {
			return nil, fmt.Errorf("dump qdiscs: %w", err)
		}
		var opts []byte
		for _, a := range attrs {
			switch a.Attr.Type {
			case nl.TCA_KIND:
				q.Kind = strings.TrimRight(string(a.Value), "\x00")
			case nl.TCA_OPTIONS:
				opts = a.Value
			}
		}
		switch q.Kind {
		case "netem":
			d, err := parseNetemOptions(opts)
			if err != nil {
				return nil, fmt.Errorf("qdisc %s: %w", handleString(q.Handle), err)
			}
			q.Netem = &d
		case "htb":
			nested, err := nl.ParseRouteAttr(opts)
			if err != nil {
				return nil, fmt.Errorf("qdisc %s: %w", handleString(q.Handle), err)
			}
			for _, a := range nested {
				if a.Attr.Type == nl.TCA_HTB_INIT && len(a.Value) >= 12 {
					q.HtbDefault = nl.NativeEndian().Uint32(a.Value[8:])
				}
			}
		}
		out = append(out, q)
	}
	return out, nil
}

func (c *conn) root() (*qdiscInfo, []qdiscInfo, error) {
	qs, err := c.qdiscs()
	if err != nil {
		return nil, nil, err
	}
	for i := range qs {
		if qs[i].Parent == netlink.HANDLE_ROOT {
			return &qs[i], qs, nil
		}
	}
	return nil, qs, nil
}

func ours(q *qdiscInfo) bool { return q != nil && q.Handle == rootHandle && q.Kind == "htb" }

func (c *conn) htbClass(minor uint16) *netlink.HtbClass {
	cl := netlink.NewHtbClass(netlink.ClassAttrs{
		LinkIndex: c.ifindex(),
		Parent:    rootHandle,
		Handle:    netlink.MakeHandle(rootMajor, minor),
	}, netlink.HtbClassAttrs{Rate: htbRateBits, Ceil: htbRateBits, Quantum: htbQuantum})
	return cl
}

func (c *conn) u32(f filterSpec, prio uint16) *netlink.U32 {
	proto, keys := uint16(unix.ETH_P_IP), []nl.TcU32Key{{Mask: 0xffffffff, Off: 16}}
	if f.Addr.Is4() {
		a := f.Addr.As4()
		keys[0].Val = uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	} else {
		proto, keys = unix.ETH_P_IPV6, nil
		a := f.Addr.As16()
		for i := 0; i < 16; i += 4 {
			keys = append(keys, nl.TcU32Key{Mask: 0xffffffff, Off: int32(24 + i),
				Val: uint32(a[i])<<24 | uint32(a[i+1])<<16 | uint32(a[i+2])<<8 | uint32(a[i+3])})
		}
	}
	return &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: c.ifindex(), Parent: rootHandle, Priority: prio, Protocol: proto},
		ClassId:     f.Class,
		Sel:         &nl.TcU32Sel{Flags: nl.TC_U32_TERMINAL, Keys: keys},
	}
}

func filterPrio(a netip.Addr) uint16 {
	if a.Is4() {
		return filterPrioV4
	}
	return filterPrioV6
}

// filterKey identifies a u32 filter by what it does.
type filterKey struct {
	Prio  uint16
	Addr  netip.Addr
	Class uint32
}

// installedFilters reads back our u32 filters. Unknown shapes are reported by string
// so that a verification failure names them.
func (c *conn) installedFilters() (map[filterKey]bool, []string, error) {
	fs, err := c.h.FilterList(c.link, rootHandle)
	if err != nil {
		return nil, nil, fmt.Errorf("list filters: %w", err)
	}
	got := map[filterKey]bool{}
	var odd []string
	for _, f := range fs {
		u, ok := f.(*netlink.U32)
		if !ok || u.Sel == nil {
			odd = append(odd, fmt.Sprintf("%s filter prio %d", f.Type(), f.Attrs().Priority))
			continue
		}
		if u32Node(u.Handle) == 0 {
			continue // a hash table, not a rule
		}
		var b []byte
		for _, k := range u.Sel.Keys {
			if k.Mask != 0xffffffff {
				b = nil
				break
			}
			b = append(b, byte(k.Val>>24), byte(k.Val>>16), byte(k.Val>>8), byte(k.Val))
		}
		addr, ok := netip.AddrFromSlice(b)
		if !ok || (len(b) == 4 && u.Sel.Keys[0].Off != 16) || (len(b) == 16 && u.Sel.Keys[0].Off != 24) {
			odd = append(odd, fmt.Sprintf("u32 filter %#x prio %d with %d keys", u.Handle, u.Priority, len(u.Sel.Keys)))
			continue
		}
		got[filterKey{u.Priority, addr, u.ClassId}] = true
	}
	return got, odd, nil
}

// u32Node is the node part of a u32 filter handle (0 for a hash table).
func u32Node(h uint32) uint32 { return h & 0xfff }

// Apply installs p for tg.Self on tg.Dev inside tg.NS, replacing whatever root qdisc
// was there, and reads the whole tree back to check it. Applying the same plan again
// changes nothing; applying another converges to it (filters are rewritten only when
// they differ). A failed read never leads to a deletion.
//
// A plan with schedules is applied as it stands at the start (p.At(0)); RunSchedule
// changes it at the schedules' instants.
func Apply(ctx context.Context, tg Target, p Plan) error { return apply(ctx, tg, p.At(0), false) }

// apply is Apply; reset sends every netem attribute, also the zero ones, so that a
// leaf changed in place forgets its old rate, reorder and correlations.
func apply(ctx context.Context, tg Target, p Plan, reset bool) error {
	s, err := spec(tg, p)
	if err != nil {
		return fmt.Errorf("netem: plan for p%d: %w", tg.Self, err)
	}
	for i := range s.Leaves {
		s.Leaves[i].Params.Reset = reset
	}
	c, err := dial(tg)
	if err != nil {
		return fmt.Errorf("netem: %w", err)
	}
	defer c.close()
	if err := c.apply(ctx, s, true); err != nil {
		return fmt.Errorf("netem: apply on %s: %w", tg.Dev, err)
	}
	if err := c.verify(s, true); err != nil {
		return fmt.Errorf("netem: verify on %s: %w", tg.Dev, err)
	}
	return nil
}

// apply installs s; leaves=false installs everything but the netem leaves, which
// lets tests check the htb and u32 part on kernels without sch_netem.
func (c *conn) apply(ctx context.Context, s treeSpec, leaves bool) error {
	root, _, err := c.root()
	if err != nil {
		return err
	}
	if root != nil && root.Handle == rootHandle && root.Kind != "htb" {
		return fmt.Errorf("root qdisc %s is a %s, not ours", handleString(root.Handle), root.Kind)
	}
	if !ours(root) {
		// htb cannot change in place (no .change): create it only when it is not there.
		htb := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: c.ifindex(), Handle: rootHandle, Parent: netlink.HANDLE_ROOT})
		htb.Defcls = defaultMinor
		if err := c.h.QdiscReplace(htb); err != nil {
			return fmt.Errorf("root htb: %w", err)
		}
	}
	if err := c.h.ClassReplace(c.htbClass(defaultMinor)); err != nil {
		return fmt.Errorf("default class: %w", err)
	}
	for _, l := range s.Leaves {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.h.ClassReplace(c.htbClass(uint16(l.Class))); err != nil {
			return fmt.Errorf("class %s: %w", handleString(l.Class), err)
		}
		if !leaves {
			continue
		}
		if err := c.leaf(l); err != nil {
			return fmt.Errorf("netem leaf %s under %s: %w", handleString(l.Handle), handleString(l.Class), hintNetem(err))
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.syncFilters(s); err != nil {
		return err
	}
	return c.deleteStaleClasses(s)
}

// leaf creates or changes the netem leaf of a class.
func (c *conn) leaf(l leafSpec) error {
	req := netemRequest(c.ifindex(), l.Class, l.Handle, l.Params)
	req.Sockets = c.raw
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// syncFilters rewrites the filters when they differ from s: delete every filter
// chain under our root, then add s's. Packets sent in between take the default class.
func (c *conn) syncFilters(s treeSpec) error {
	got, odd, err := c.installedFilters()
	if err != nil {
		return err
	}
	want := map[filterKey]bool{}
	for _, f := range s.Filters {
		want[filterKey{filterPrio(f.Addr), f.Addr, f.Class}] = true
	}
	if len(odd) == 0 && maps.Equal(got, want) {
		return nil
	}
	for _, prio := range []uint16{filterPrioV4, filterPrioV6} {
		proto := uint16(unix.ETH_P_IP)
		if prio == filterPrioV6 {
			proto = unix.ETH_P_IPV6
		}
		del := &netlink.U32{FilterAttrs: netlink.FilterAttrs{LinkIndex: c.ifindex(), Parent: rootHandle, Priority: prio, Protocol: proto}}
		if err := c.h.FilterDel(del); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("delete filters prio %d: %w", prio, err)
		}
	}
	for _, f := range s.Filters {
		if err := c.h.FilterAdd(c.u32(f, filterPrio(f.Addr))); err != nil {
			return fmt.Errorf("filter p%d %s -> %s: %w", f.Server, f.Addr, handleString(f.Class), err)
		}
	}
	return nil
}

func (c *conn) deleteStaleClasses(s treeSpec) error {
	cls, err := c.h.ClassList(c.link, rootHandle)
	if err != nil {
		return fmt.Errorf("list classes: %w", err)
	}
	keep := map[uint32]bool{netlink.MakeHandle(rootMajor, defaultMinor): true}
	for _, l := range s.Leaves {
		keep[l.Class] = true
	}
	for _, cl := range cls {
		if a := cl.Attrs(); !keep[a.Handle] {
			if err := c.h.ClassDel(cl); err != nil {
				return fmt.Errorf("delete stale class %s: %w", handleString(a.Handle), err)
			}
		}
	}
	return nil
}

// verify reads the tree back and compares it with s.
func (c *conn) verify(s treeSpec, leaves bool) error {
	root, qs, err := c.root()
	if err != nil {
		return err
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case root == nil:
		bad("no root qdisc")
	case !ours(root):
		bad("root is %s %s, want htb %s", root.Kind, handleString(root.Handle), handleString(rootHandle))
	case root.HtbDefault != defaultMinor:
		bad("root htb default %#x, want %#x", root.HtbDefault, defaultMinor)
	}
	leafOf := map[uint32]qdiscInfo{}
	for _, q := range qs {
		leafOf[q.Parent] = q
	}
	for _, l := range s.Leaves {
		q, ok := leafOf[l.Class]
		switch {
		case !leaves:
		case !ok:
			bad("class %s has no leaf qdisc", handleString(l.Class))
		case q.Kind != "netem" || q.Handle != l.Handle:
			bad("leaf of %s is %s %s, want netem %s", handleString(l.Class), q.Kind, handleString(q.Handle), handleString(l.Handle))
		default:
			d, w := q.Netem, l.Params
			if d.Limit != w.Limit || d.Latency != w.Latency || d.Jitter != w.Jitter || d.Loss != w.Loss || d.Rate != w.Rate ||
				(d.HasSeed && d.Seed != w.Seed) {
				bad("netem %s: kernel has limit %d delay %v jitter %v loss %d rate %d seed %d, want limit %d delay %v jitter %v loss %d rate %d seed %d",
					handleString(l.Handle), d.Limit, d.Latency, d.Jitter, d.Loss, d.Rate, d.Seed,
					w.Limit, w.Latency, w.Jitter, w.Loss, w.Rate, w.Seed)
			}
		}
	}
	cls, err := c.h.ClassList(c.link, rootHandle)
	if err != nil {
		return fmt.Errorf("list classes: %w", err)
	}
	want := map[uint32]bool{netlink.MakeHandle(rootMajor, defaultMinor): true}
	for _, l := range s.Leaves {
		want[l.Class] = true
	}
	for _, cl := range cls {
		a := cl.Attrs()
		// Top-level classes are created under 9e: and dumped with parent "root".
		if !want[a.Handle] || cl.Type() != "htb" || (a.Parent != rootHandle && a.Parent != netlink.HANDLE_ROOT) {
			bad("unexpected %s class %s (parent %s)", cl.Type(), handleString(a.Handle), handleString(a.Parent))
		}
		delete(want, a.Handle)
	}
	for h := range want {
		bad("class %s missing", handleString(h))
	}
	got, odd, err := c.installedFilters()
	if err != nil {
		return err
	}
	for _, o := range odd {
		bad("unexpected %s", o)
	}
	for _, f := range s.Filters {
		k := filterKey{filterPrio(f.Addr), f.Addr, f.Class}
		if !got[k] {
			bad("no filter %s -> %s (p%d)", f.Addr, handleString(f.Class), f.Server)
		}
		delete(got, k)
	}
	for k := range got {
		bad("unexpected filter %s -> %s", k.Addr, handleString(k.Class))
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Clear removes what Apply installed on tg.Dev: the root qdisc, if it is our htb
// (its classes, leaves and filters go with it; the kernel puts the default qdisc
// back). Anything else is left alone. Clearing twice is fine.
func Clear(ctx context.Context, tg Target) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := dial(tg)
	if err != nil {
		return fmt.Errorf("netem: %w", err)
	}
	defer c.close()
	root, _, err := c.root()
	if err != nil {
		return fmt.Errorf("netem: clear %s: %w", tg.Dev, err)
	}
	if !ours(root) {
		return nil
	}
	del := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: c.ifindex(), Handle: rootHandle, Parent: netlink.HANDLE_ROOT})
	if err := c.h.QdiscDel(del); err != nil {
		return fmt.Errorf("netem: clear %s: delete root: %w", tg.Dev, err)
	}
	return nil
}

// Show describes the tree on tg.Dev as the kernel reports it, one line per element.
func Show(ctx context.Context, tg Target) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	c, err := dial(tg)
	if err != nil {
		return "", fmt.Errorf("netem: %w", err)
	}
	defer c.close()
	root, qs, err := c.root()
	if err != nil {
		return "", fmt.Errorf("netem: show %s: %w", tg.Dev, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dev %s:", tg.Dev)
	if !ours(root) {
		if root == nil {
			b.WriteString(" no root qdisc (not installed by polebench)\n")
		} else {
			fmt.Fprintf(&b, " root %s %s (not installed by polebench)\n", root.Kind, handleString(root.Handle))
		}
		return b.String(), nil
	}
	fmt.Fprintf(&b, " root htb %s default %s\n", handleString(rootHandle), handleString(netlink.MakeHandle(rootMajor, uint16(root.HtbDefault))))
	cls, err := c.h.ClassList(c.link, rootHandle)
	if err != nil {
		return "", fmt.Errorf("netem: show %s: list classes: %w", tg.Dev, err)
	}
	filters, odd, err := c.installedFilters()
	if err != nil {
		return "", fmt.Errorf("netem: show %s: %w", tg.Dev, err)
	}
	dests := map[uint32][]string{}
	for k := range filters {
		dests[k.Class] = append(dests[k.Class], k.Addr.String())
	}
	leafOf := map[uint32]qdiscInfo{}
	for _, q := range qs {
		leafOf[q.Parent] = q
	}
	slices.SortFunc(cls, func(a, b netlink.Class) int { return cmp.Compare(a.Attrs().Handle, b.Attrs().Handle) })
	for _, cl := range cls {
		h := cl.Attrs().Handle
		fmt.Fprintf(&b, "  class %s", handleString(h))
		q, ok := leafOf[h]
		switch {
		case !ok && h == netlink.MakeHandle(rootMajor, uint16(root.HtbDefault)):
			b.WriteString(" no delay")
		case !ok:
			b.WriteString(" no netem leaf (no delay)")
		case q.Netem != nil:
			d := q.Netem
			fmt.Fprintf(&b, " netem %s delay %v jitter %v %s limit %d", handleString(q.Handle), d.Latency, d.Jitter, distOfLeaf(q.Handle), d.Limit)
			if d.Loss != 0 {
				fmt.Fprintf(&b, " loss %.4g%%", float64(d.Loss)/float64(^uint32(0))*100)
			}
			if d.Rate != 0 {
				fmt.Fprintf(&b, " rate %dB/s", d.Rate)
			}
			if d.HasSeed {
				fmt.Fprintf(&b, " seed %d", d.Seed)
			} else {
				b.WriteString(" seed unsupported by kernel")
			}
		default:
			fmt.Fprintf(&b, " leaf %s %s", q.Kind, handleString(q.Handle))
		}
		if h == netlink.MakeHandle(rootMajor, uint16(root.HtbDefault)) {
			b.WriteString(" (default)")
		}
		if ds := dests[h]; len(ds) > 0 {
			slices.Sort(ds)
			fmt.Fprintf(&b, " <- %s", strings.Join(ds, " "))
		}
		b.WriteByte('\n')
	}
	for _, o := range odd {
		fmt.Fprintf(&b, "  unexpected %s\n", o)
	}
	return b.String(), nil
}

// distOfLeaf reads the distribution back from a leaf handle (see the tree above).
func distOfLeaf(h uint32) string {
	i := int(h>>16)/0x1000 - 1
	if i < 0 || i >= len(Dists) {
		return "dist ?"
	}
	return Dists[i]
}

// handleString prints a tc handle like tc does: "9e:" or "9e:10".
func handleString(h uint32) string {
	switch h {
	case netlink.HANDLE_ROOT:
		return "root"
	case netlink.HANDLE_NONE:
		return "none"
	}
	if h&0xffff == 0 {
		return fmt.Sprintf("%x:", h>>16)
	}
	return fmt.Sprintf("%x:%x", h>>16, h&0xffff)
}

// hintNetem adds the likely cause when the kernel does not know netem.
func hintNetem(err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%w (is module sch_netem available?)", err)
	}
	return err
}
