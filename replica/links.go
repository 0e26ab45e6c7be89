package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/netem"
)

// How a server with a link plan (Config.LinkPlan) emulates its links (Config.LinkMode).
// A server that installs the kernel plan itself needs nothing from outside its own
// network namespace, which is what lets any orchestrator run it (Docker Swarm tasks,
// Kubernetes pods with NET_ADMIN): no harness reaches into remote namespaces.
const (
	// LinksUserSpace (the default with a plan): the peer transport holds each message
	// for the plan's delay.
	LinksUserSpace = "user-space"
	// LinksKernel: the plan's tc-netem tree on this server's own interface (netem.Apply,
	// the code the netns backend runs from outside); start fails without CAP_NET_ADMIN
	// or sch_netem.
	LinksKernel = "kernel"
	// LinksAuto: kernel when this process has CAP_NET_ADMIN and netem.ProbeHere passes,
	// else user space; /status says which and why.
	LinksAuto = "auto"
	// LinksNone: no plan; the network is what it is (or emulated from outside).
	LinksNone = "none"
)

// How often a server with kernel links looks its peers' addresses up again: on an
// overlay network a restarted peer comes back at a new address.
const linkResolveEvery = 500 * time.Millisecond

// LinkStatus is the "links" of GET /status: how this server's links are emulated.
type LinkStatus struct {
	Mode   string `json:"mode"`             // kernel, user-space or none
	Reason string `json:"reason,omitempty"` // why auto mode chose user space
	Dev    string `json:"dev,omitempty"`    // kernel: the interface the tree is on
	// Peers are the addresses the kernel tree filters on, by peer id; a peer not yet
	// resolved is missing (its packets are not delayed until it is).
	Peers map[int]string `json:"peers,omitempty"`
	Error string         `json:"error,omitempty"` // kernel: the last failure to resolve or install
}

// Complete says whether every peer of n servers has its link installed.
func (s LinkStatus) Complete(n int) bool { return s.Mode != LinksKernel || len(s.Peers) == n-1 }

// kernelLinks keeps this server's links of the plan installed on its own interface,
// following its peers' addresses as they change.
type kernelLinks struct {
	plan  netem.Plan
	self  int
	hosts map[int]string // peer id -> host (an address or a name)
	dev   string         // as configured; else the interface that routes to the peers
	log   *slog.Logger

	installed map[int]netip.Addr // owned by run
	status    atomic.Pointer[LinkStatus]
}

func newKernelLinks(cfg Config, plan netem.Plan, log *slog.Logger) *kernelLinks {
	k := &kernelLinks{plan: plan, self: cfg.ID, hosts: map[int]string{}, dev: cfg.LinkDev, log: log}
	for _, p := range cfg.Servers {
		if p.ID != cfg.ID {
			k.hosts[p.ID] = p.Host
		}
	}
	k.status.Store(&LinkStatus{Mode: LinksKernel, Dev: k.dev})
	return k
}

// run installs the links and follows the peers' addresses until ctx ends.
func (k *kernelLinks) run(ctx context.Context) {
	t := time.NewTicker(linkResolveEvery)
	defer t.Stop()
	for {
		k.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sync looks every peer up and installs the plan among those found when their
// addresses changed. A peer that does not resolve (not started yet, or dead: an
// overlay's DNS drops it) keeps its last address.
func (k *kernelLinks) sync(ctx context.Context) {
	addrs := maps.Clone(k.installed)
	if addrs == nil {
		addrs = map[int]netip.Addr{}
	}
	type found struct {
		id   int
		addr netip.Addr
		err  error
	}
	ch := make(chan found, len(k.hosts))
	for id, host := range k.hosts {
		go func() {
			a, err := lookup(ctx, host)
			ch <- found{id, a, err}
		}()
	}
	var errs []string
	for range k.hosts {
		f := <-ch
		if f.err != nil {
			errs = append(errs, fmt.Sprintf("p%d (%s): %v", f.id, k.hosts[f.id], f.err))
			continue
		}
		addrs[f.id] = f.addr
	}
	slices.Sort(errs)
	st := *k.status.Load()
	st.Error = strings.Join(errs, "; ")
	if len(addrs) > 0 && !maps.Equal(addrs, k.installed) {
		if err := k.install(ctx, addrs); err != nil {
			st.Error = strings.Join(append(errs, err.Error()), "; ")
			k.log.Error("kernel links", "err", err)
		} else {
			k.installed = addrs
			st.Dev, st.Peers = k.dev, map[int]string{}
			for id, a := range addrs {
				st.Peers[id] = a.String()
			}
			k.log.Info("kernel links installed", "dev", k.dev, "peers", st.Peers)
		}
	}
	k.status.Store(&st)
}

func (k *kernelLinks) install(ctx context.Context, addrs map[int]netip.Addr) error {
	if k.dev == "" {
		dev, err := routeDev(addrs)
		if err != nil {
			return err
		}
		k.dev = dev
	}
	ids := append(slices.Collect(maps.Keys(addrs)), k.self)
	return netem.Apply(ctx, netem.Target{Dev: k.dev, Self: k.self, Addrs: addrs}, k.plan.Among(ids))
}

// clear removes the tree (when the server stops; a killed one leaves it to its
// namespace, and Apply replaces it when the server comes back there).
func (k *kernelLinks) clear() {
	if k.dev == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := netem.Clear(ctx, netem.Target{Dev: k.dev, Self: k.self}); err != nil {
		k.log.Error("clear kernel links", "err", err)
	}
}

// lookup resolves a host to one IPv4 address (the plan's filters match IPv4 and IPv6
// alike, but overlay networks give tasks IPv4).
func lookup(ctx context.Context, host string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	as, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil {
		return netip.Addr{}, err
	}
	if len(as) == 0 {
		return netip.Addr{}, errors.New("no address")
	}
	slices.SortFunc(as, netip.Addr.Compare)
	return as[0].Unmap(), nil
}

// routeDev is the interface this namespace routes the peers through: in a container
// on an overlay network that is the overlay's, not the gateway bridge's.
func routeDev(addrs map[int]netip.Addr) (string, error) {
	var dev string
	for id, a := range addrs {
		rs, err := netlink.RouteGet(a.AsSlice())
		if err != nil || len(rs) == 0 {
			return "", fmt.Errorf("no route to p%d at %s: %v", id, a, err)
		}
		l, err := netlink.LinkByIndex(rs[0].LinkIndex)
		if err != nil {
			return "", fmt.Errorf("route to p%d at %s: %w", id, a, err)
		}
		if dev != "" && l.Attrs().Name != dev {
			return "", fmt.Errorf("peers are routed through %s and %s: set link_dev", dev, l.Attrs().Name)
		}
		dev = l.Attrs().Name
	}
	return dev, nil
}

// kernelLinksUnavailable says why this process cannot install its own links in the
// kernel, or nil if it can (a variable: tests on a machine where they can take the
// other path).
var kernelLinksUnavailable = probeKernelLinks

func probeKernelLinks(ctx context.Context) error {
	ok, err := hasCapability(unix.CAP_NET_ADMIN)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("no CAP_NET_ADMIN")
	}
	return netem.ProbeHere(ctx)
}

// hasCapability reads this process's effective capabilities.
func hasCapability(c int) (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, fmt.Errorf("capabilities: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("capabilities: %q: %w", line, err)
			}
			return eff&(1<<c) != 0, nil
		}
	}
	return false, errors.New("capabilities: no CapEff in /proc/self/status")
}
