package netem

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// newNamespace creates an anonymous network namespace and returns a handle to it
// without moving the caller: unshare runs on a locked thread, which moves back to its
// original namespace before it is unlocked. (A thread left locked in the scratch
// namespace is discarded by Go, except the main thread, which Go parks instead: the
// process would then stay listed inside the namespace.)
func newNamespace() (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			ch <- result{netns.None(), err}
			return // stays locked: Go discards the thread
		}
		defer orig.Close()
		ns, err := netns.New()
		if err == nil && netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{ns, err}
	}()
	r := <-ch
	return r.ns, r.err
}

// Probe reports whether this kernel can run Apply's tree: in a scratch namespace with
// a throwaway veth pair it installs an htb root, a class, a u32 filter and a netem leaf
// with a Pareto table, then drops the namespace (and everything in it). It returns nil,
// or one line saying what is missing.
func Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ns, err := newNamespace()
	if err != nil {
		return fmt.Errorf("netem probe: cannot create a scratch network namespace (needs root): %w", err)
	}
	defer ns.Close() // the last reference: the kernel removes the namespace and its veths
	return probeIn(ctx, ns, "probe0", "probe1", false)
}

// ProbeHere is Probe for a process that may not create namespaces but may configure
// its own (a container or pod with CAP_NET_ADMIN only, such as a replica that applies
// its own links): the throwaway veth pair lives in the caller's network namespace,
// named after the process, for as long as the probe takes.
func ProbeHere(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a := hereDev()
	return probeIn(ctx, netns.None(), a, a+"p", true)
}

// hereDev names ProbeHere's veth by the process, so concurrent probers never collide.
func hereDev() string { return fmt.Sprintf("pbprobe%d", os.Getpid()%1e7) }

// probeIn installs the probe's tree on a new veth pair in ns; remove deletes the pair
// afterwards (a scratch namespace takes it along when it goes).
func probeIn(ctx context.Context, ns netns.NsHandle, dev, peer string, remove bool) error {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netem probe: netlink: %w", err)
	}
	defer h.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: dev}, PeerName: peer}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("netem probe: cannot create a veth pair (needs CAP_NET_ADMIN): %w", err)
	}
	if remove {
		defer h.LinkDel(veth) // takes its peer along
	}
	tg := Target{NS: ns, Dev: dev, Self: 1, Addrs: map[int]netip.Addr{2: netip.MustParseAddr("192.0.2.2")}}
	p := Plan{Links: []Link{
		{From: 1, To: 2, Delay: 5 * time.Millisecond, Jitter: 100 * time.Microsecond, Dist: DistPareto},
		{From: 2, To: 1, Delay: 5 * time.Millisecond, Jitter: 100 * time.Microsecond, Dist: DistPareto},
	}}
	s, err := spec(tg, p)
	if err != nil {
		return fmt.Errorf("netem probe: %w", err) // cannot happen: the plan above is valid
	}
	c, err := dial(tg)
	if err != nil {
		return fmt.Errorf("netem probe: %w", err)
	}
	defer c.close()
	if err := c.apply(ctx, s, false); err != nil {
		return fmt.Errorf("kernel lacks %s: %w", missingModule(err), err)
	}
	if err := c.leaf(s.Leaves[0]); err != nil {
		return fmt.Errorf("kernel lacks sch_netem: %w", hintNetem(err))
	}
	if err := c.verify(s, true); err != nil {
		return fmt.Errorf("netem probe: the kernel does not keep what was installed: %w", err)
	}
	return nil
}

// missingModule guesses which module a failed htb/u32 install points at, from the
// step apply names at the start of its error.
func missingModule(err error) string {
	msg := err.Error()
	for _, m := range []struct{ prefix, module string }{
		{"filter", "cls_u32"}, {"delete filters", "cls_u32"},
		{"root htb", "sch_htb"}, {"default class", "sch_htb"}, {"class", "sch_htb"},
	} {
		if strings.HasPrefix(msg, m.prefix) {
			return m.module
		}
	}
	return "tc support"
}
