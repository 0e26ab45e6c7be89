package bridge

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

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/cluster/internal/procs"
)

// Down removes what netns clusters labelled label left behind (every polebench
// netns cluster when label is empty): it kills the processes inside their namespaces
// (found by comparing /proc/PID/ns/net with each namespace), then deletes the host
// veths, bridges, veths and namespaces. It lists what it removed.
func Down(ctx context.Context, label string) (removed []string, err error) {
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	if label != "" {
		if err := CheckLabel(label); err != nil {
			return nil, err
		}
	}
	found, err := List()
	if err != nil {
		return nil, err
	}
	byLabel := map[string][]string{}
	for _, f := range found {
		if label == "" || f.Label == label {
			byLabel[f.Label] = append(byLabel[f.Label], f.Name)
		}
	}
	// A host veth may outlive its namespaces (a crash between the two).
	vethLabels, err := hostVethLabels()
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
		killed, err := killProcs(ctx, names)
		removed = append(removed, killed...)
		if err != nil {
			errs = append(errs, err)
		}
		gone, err := Teardown(l, names, true)
		removed = append(removed, gone...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// hostVethLabels returns the labels of the host veths of netns clusters.
func hostVethLabels() ([]string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list host links: %w", err)
	}
	var out []string
	for _, l := range links {
		a := l.Attrs()
		if lab, ok := strings.CutPrefix(a.Alias, aliasPrefix); ok && a.Name == hostVeth(lab) {
			out = append(out, lab)
		}
	}
	return out, nil
}

// killProcs SIGKILLs every process inside namespaces names and waits (a few
// seconds at most) until none is left.
func killProcs(ctx context.Context, names []string) (killed []string, _ error) {
	inodes := map[uint64]string{}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(nsDir, name), &st); err == nil {
			inodes[st.Ino] = name
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), procs.Grace)
	defer cancel()
	for {
		in, err := procsIn(inodes)
		if err != nil {
			return killed, err
		}
		if len(in) == 0 {
			return killed, nil
		}
		delete(in, os.Getpid()) // never this harness, whatever its main thread shows
		if len(in) == 0 {
			return killed, nil
		}
		for pid, ns := range in {
			cmd := comm(pid)
			if err := unix.Kill(pid, unix.SIGKILL); err == nil || errors.Is(err, unix.ESRCH) {
				entry := fmt.Sprintf("process %d (%s) in %s", pid, cmd, ns)
				if !slices.Contains(killed, entry) {
					killed = append(killed, entry)
				}
			}
		}
		select {
		case <-ctx.Done():
			var left []string
			for pid, ns := range in {
				left = append(left, fmt.Sprintf("%d (%s) in %s", pid, comm(pid), ns))
			}
			slices.Sort(left)
			return killed, fmt.Errorf("processes survive SIGKILL: %s", strings.Join(left, ", "))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Server is one server of a running netns cluster, as found by label.
type Server struct {
	ID   int
	Name string // of its namespace
	NS   netns.NsHandle
	Addr netip.Addr
}

// Find opens the server namespaces of the cluster labelled label (the only one
// running when label is empty) and reads their addresses, ordered by id. The caller
// closes the handles.
func Find(label string) (string, []Server, error) {
	found, err := List()
	if err != nil {
		return "", nil, err
	}
	labels := map[string]bool{}
	for _, f := range found {
		labels[f.Label] = true
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
	var out []Server
	fail := func(err error) (string, []Server, error) {
		for _, s := range out {
			s.NS.Close()
		}
		return "", nil, err
	}
	for _, f := range found {
		if f.Label != label || f.ID == 0 {
			continue
		}
		ns, err := netns.GetFromPath(filepath.Join(nsDir, f.Name))
		if err != nil {
			return fail(fmt.Errorf("open namespace %s: %w", f.Name, err))
		}
		out = append(out, Server{ID: f.ID, Name: f.Name, NS: ns})
		addr, err := devAddr(ns)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", f.Name, err))
		}
		out[len(out)-1].Addr = addr
	}
	if len(out) == 0 {
		return fail(fmt.Errorf("netns cluster %q has no server namespaces", label))
	}
	slices.SortFunc(out, func(a, b Server) int { return a.ID - b.ID })
	return label, out, nil
}

// devAddr is the IPv4 address of a server namespace's interface.
func devAddr(ns netns.NsHandle) (netip.Addr, error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	l, err := h.LinkByName(Dev)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: %w", Dev, err)
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_V4)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("no IPv4 address on %s (%v)", Dev, err)
	}
	a, _ := netip.AddrFromSlice(addrs[0].IP)
	return a.Unmap(), nil
}
