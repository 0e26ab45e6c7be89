package bridge

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Remove removes the network of the cluster labelled label with servers ids: their
// namespaces, the switch's, and the host's veth. The caller has closed its Net.
func Remove(label string, ids []int) ([]string, error) {
	names := []string{Name(label, 0)}
	for _, id := range ids {
		names = append(names, Name(label, id))
	}
	return Teardown(label, names, true)
}

// Inodes maps the inode of each namespace of the cluster labelled label to its name.
func Inodes(label string) (map[uint64]string, error) {
	found, err := List()
	if err != nil {
		return nil, err
	}
	out := map[uint64]string{}
	for _, f := range found {
		if f.Label != label {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(nsDir, f.Name), &st); err != nil {
			return nil, err
		}
		out[st.Ino] = f.Name
	}
	return out, nil
}

// Leftovers lists what the cluster labelled label left on this machine, as Down and
// Teardown name what they remove: its namespaces, its host veth, the links in the
// switch namespace sw (a handle opened before the cluster closed; netns.None() to
// skip), and the processes in the namespaces whose inodes are given (Inodes, before
// the cluster closed). The backends' tests check their Close and Down with it.
func Leftovers(label string, sw netns.NsHandle, inodes map[uint64]string) ([]string, error) {
	var left []string
	found, err := List()
	if err != nil {
		return nil, err
	}
	for _, f := range found {
		if f.Label == label {
			left = append(left, "namespace "+f.Name)
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if l.Attrs().Name == hostVeth(label) || l.Attrs().Alias == alias(label) {
			left = append(left, "host veth "+l.Attrs().Name)
		}
	}
	if sw.IsOpen() {
		h, err := netlink.NewHandleAt(sw, unix.NETLINK_ROUTE)
		if err != nil {
			return nil, err
		}
		defer h.Close()
		links, err := h.LinkList()
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			if l.Attrs().Name != "lo" {
				left = append(left, fmt.Sprintf("%s %s in the switch namespace", l.Type(), l.Attrs().Name))
			}
		}
	}
	in, err := procsIn(inodes)
	if err != nil {
		return nil, err
	}
	for pid, ns := range in {
		left = append(left, fmt.Sprintf("process %d (%s) in %s", pid, comm(pid), ns))
	}
	slices.Sort(left)
	return left, nil
}
