package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/netem"
)

// Ports a member listens on in its namespace: etcd's usual ones.
const (
	clientPort = 2379
	peerPort   = 2380
)

// NewNetns starts opts.Topology's servers as etcd processes, one per network
// namespace on the netns backend's bridge (package bridge), each on etcd's usual
// ports at its own address. The plan is applied by the kernel's netem when
// netem.Probe passes; else by the user-space links, whose fronts listen on the host's
// address on the bridge and tell the sender by its namespace's address.
func NewNetns(ctx context.Context, opts cluster.Options) (_ *Cluster, err error) {
	ids, err := bridge.Servers(opts, "etcd", Available)
	if err != nil {
		return nil, err
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	if err := bridge.CheckLabel(c.label); err != nil {
		c.Close(ctx)
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close(context.WithoutCancel(ctx)))
		}
	}()
	if c.mode, err = bridge.LinkMode(ctx, opts.Plan, c.log, c.label, "a delaying proxy per ordered pair of members"); err != nil {
		return nil, err
	}
	n, err := bridge.Create(c.label, ids)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	c.startIn = func(id int, cmd *exec.Cmd) (*procs.Proc, error) { return bridge.Start(n.NS[id], cmd) }
	c.teardown = func() error {
		n.Close()
		_, err := bridge.Remove(c.label, ids)
		return err
	}
	for _, id := range ids {
		m := c.members[id]
		a := n.Addrs[id].String()
		m.client, m.peer = net.JoinHostPort(a, strconv.Itoa(clientPort)), net.JoinHostPort(a, strconv.Itoa(peerPort))
		m.adv = m.peer
	}
	switch c.mode {
	case cluster.LinksUserSpace:
		if err := c.userSpaceOnBridge("netns", opts.Plan, n.HostAddr(), n.Addrs); err != nil {
			return nil, err
		}
	case cluster.LinksKernel:
		k, err := n.ApplyPlan(ctx, ids, opts.Plan)
		if err != nil {
			return nil, err
		}
		c.cuts = k
	}
	return c, c.start(ctx, opts.InitialLeader)
}

// userSpaceOnBridge carries plan by the user-space links on a bridge (package bridge)
// where the host is at host and each member at its address in addrs: the fronts
// listen on the host's address and tell the sender by its source address. They carry
// TCP streams, which lose nothing, so a plan with loss is an error (backend says whose).
func (c *Cluster) userSpaceOnBridge(backend string, plan netem.Plan, host netip.Addr, addrs map[int]netip.Addr) (err error) {
	for _, l := range plan.Links {
		if l.LossPct > 0 || l.LossGE != (netem.GEModel{}) {
			return fmt.Errorf("%s: the kernel lacks sch_netem, and the user-space fallback carries TCP streams, which lose nothing: the plan's loss p%d->p%d cannot be applied", backend, l.From, l.To)
		}
	}
	if c.links, err = newLinks(c, plan, host.String(), senderByAddr(addrs)); err != nil {
		return err
	}
	c.cuts = &c.links.proxies
	return nil
}

// senderByAddr tells the sender of a connection by its source address: each member
// has its namespace's own.
func senderByAddr(addrs map[int]netip.Addr) sender {
	return func(conn net.Conn) int {
		ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
		if err != nil {
			return 0
		}
		for id, a := range addrs {
			if a == ap.Addr().Unmap() {
				return id
			}
		}
		return 0
	}
}
