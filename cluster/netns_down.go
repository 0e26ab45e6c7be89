package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetnsDown removes what netns clusters labelled label left behind (every polebench
// netns cluster when label is empty): it kills the processes inside their namespaces
// (found by comparing /proc/PID/ns/net with each namespace), then deletes the host
// veths, bridges, veths and namespaces. It lists what it removed.
func NetnsDown(ctx context.Context, label string) (removed []string, err error) {
	if err := netnsCheckRoot(); err != nil {
		return nil, err
	}
	if label != "" {
		if err := netnsCheckLabel(label); err != nil {
			return nil, err
		}
	}
	found, err := netnsList()
	if err != nil {
		return nil, err
	}
	byLabel := map[string][]string{}
	for _, f := range found {
		if label == "" || f.label == label {
			byLabel[f.label] = append(byLabel[f.label], f.name)
		}
	}
	// A host veth may outlive its namespaces (a crash between the two).
	vethLabels, err := netnsHostVethLabels()
	if err != nil {
		return nil, err
	}
	for _, l := range vethLabels {
		if (label == "" || l == label) && byLabel[l] == nil {
			byLabel[l] = []string{}
		}
	}
	var errs []error
	for _, l := range slices.Sorted(maps.Keys(byLabel)) {
		names := byLabel[l]
		killed, err := netnsKillProcs(ctx, names)
		removed = append(removed, killed...)
		if err != nil {
			errs = append(errs, err)
		}
		gone, err := netnsTeardown(l, names, true)
		removed = append(removed, gone...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// netnsHostVethLabels returns the labels of the host veths of netns clusters.
func netnsHostVethLabels() ([]string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list host links: %w", err)
	}
	var out []string
	for _, l := range links {
		a := l.Attrs()
		if lab, ok := strings.CutPrefix(a.Alias, netnsAliasPrefix); ok && a.Name == netnsHostVeth(lab) {
			out = append(out, lab)
		}
	}
	return out, nil
}

// netnsKillProcs SIGKILLs every process inside namespaces names and waits (a few
// seconds at most) until none is left.
func netnsKillProcs(ctx context.Context, names []string) (killed []string, _ error) {
	inodes := map[uint64]string{}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(netnsDir, name), &st); err == nil {
			inodes[st.Ino] = name
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), netnsGrace)
	defer cancel()
	for {
		procs, err := procsInNetns(inodes)
		if err != nil {
			return killed, err
		}
		if len(procs) == 0 {
			return killed, nil
		}
		delete(procs, os.Getpid()) // never this harness, whatever its main thread shows
		if len(procs) == 0 {
			return killed, nil
		}
		for pid, ns := range procs {
			comm := procComm(pid)
			if err := unix.Kill(pid, unix.SIGKILL); err == nil || errors.Is(err, unix.ESRCH) {
				entry := fmt.Sprintf("process %d (%s) in %s", pid, comm, ns)
				if !slices.Contains(killed, entry) {
					killed = append(killed, entry)
				}
			}
		}
		select {
		case <-ctx.Done():
			var left []string
			for pid, ns := range procs {
				left = append(left, fmt.Sprintf("%d (%s) in %s", pid, procComm(pid), ns))
			}
			slices.Sort(left)
			return killed, fmt.Errorf("processes survive SIGKILL: %s", strings.Join(left, ", "))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// netnsServer is one server of a running netns cluster, as found by label.
type netnsServer struct {
	id   int
	name string
	ns   netns.NsHandle
	addr netip.Addr
}

// netnsFind opens the server namespaces of the cluster labelled label (the only one
// running when label is empty) and reads their addresses. The caller closes the handles.
func netnsFind(label string) (string, []netnsServer, error) {
	found, err := netnsList()
	if err != nil {
		return "", nil, err
	}
	labels := map[string]bool{}
	for _, f := range found {
		labels[f.label] = true
	}
	switch {
	case label != "" && !labels[label]:
		return "", nil, fmt.Errorf("no netns cluster labelled %q is running", label)
	case label == "" && len(labels) == 0:
		return "", nil, errors.New("no netns cluster is running")
	case label == "" && len(labels) > 1:
		return "", nil, fmt.Errorf("several netns clusters are running, name one: %s", strings.Join(slices.Sorted(maps.Keys(labels)), ", "))
	case label == "":
		for l := range labels {
			label = l
		}
	}
	var out []netnsServer
	fail := func(err error) (string, []netnsServer, error) {
		for _, s := range out {
			s.ns.Close()
		}
		return "", nil, err
	}
	for _, f := range found {
		if f.label != label || f.id == 0 {
			continue
		}
		ns, err := netns.GetFromPath(filepath.Join(netnsDir, f.name))
		if err != nil {
			return fail(fmt.Errorf("open namespace %s: %w", f.name, err))
		}
		out = append(out, netnsServer{id: f.id, name: f.name, ns: ns})
		addr, err := netnsDevAddr(ns)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", f.name, err))
		}
		out[len(out)-1].addr = addr
	}
	if len(out) == 0 {
		return fail(fmt.Errorf("netns cluster %q has no server namespaces", label))
	}
	slices.SortFunc(out, func(a, b netnsServer) int { return a.id - b.id })
	return label, out, nil
}

// netnsDevAddr is the IPv4 address of a server namespace's interface.
func netnsDevAddr(ns netns.NsHandle) (netip.Addr, error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	l, err := h.LinkByName(netnsDev)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: %w", netnsDev, err)
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_V4)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("no IPv4 address on %s (%v)", netnsDev, err)
	}
	a, _ := netip.AddrFromSlice(addrs[0].IP)
	return a.Unmap(), nil
}

// netnsKernelOp runs op on every server of the cluster labelled label, after checking
// that the kernel can run netem at all.
func netnsKernelOp(ctx context.Context, label string, op func(netnsServer, netem.Target) error) error {
	if err := netnsCheckRoot(); err != nil {
		return err
	}
	if err := netem.Probe(ctx); err != nil {
		return fmt.Errorf("netem: this kernel cannot run the kernel link plan (netns clusters here use poled's user-space links): %w", err)
	}
	_, servers, err := netnsFind(label)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range servers {
			s.ns.Close()
		}
	}()
	addrs := map[int]netip.Addr{}
	for _, s := range servers {
		addrs[s.id] = s.addr
	}
	for _, s := range servers {
		if err := op(s, netem.Target{NS: s.ns, Dev: netnsDev, Self: s.id, Addrs: addrs}); err != nil {
			return fmt.Errorf("p%d (%s): %w", s.id, s.name, err)
		}
	}
	return nil
}

// NetnsApply installs plan with the kernel's netem in every server namespace of the
// running netns cluster labelled label (the only one when label is empty).
func NetnsApply(ctx context.Context, label string, plan netem.Plan) error {
	return netnsKernelOp(ctx, label, func(s netnsServer, tg netem.Target) error {
		if !slices.Contains(plan.Servers(), s.id) {
			return fmt.Errorf("the plan has no links for p%d (it covers %v)", s.id, plan.Servers())
		}
		return netem.Apply(ctx, tg, plan)
	})
}

// NetnsShow describes the netem tree of every server namespace of the cluster.
func NetnsShow(ctx context.Context, label string) (string, error) {
	var b strings.Builder
	err := netnsKernelOp(ctx, label, func(s netnsServer, tg netem.Target) error {
		out, err := netem.Show(ctx, tg)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "p%d %s %s %s", s.id, s.name, s.addr, out)
		if !strings.HasSuffix(out, "\n") {
			b.WriteByte('\n')
		}
		return nil
	})
	return b.String(), err
}

// NetnsClear removes the netem tree Apply installed from every server namespace.
func NetnsClear(ctx context.Context, label string) error {
	return netnsKernelOp(ctx, label, func(_ netnsServer, tg netem.Target) error {
		return netem.Clear(ctx, tg)
	})
}
