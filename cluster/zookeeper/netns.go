package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/procs"
)

// NewNetns starts opts.Topology's servers as ZooKeeper JVMs, one per network namespace
// on the netns backend's bridge (package bridge), each on ZooKeeper's usual ports at
// its own address. The plan is applied by the kernel's netem when netem.Probe passes;
// else by user-space proxies that listen on the host's address on the bridge.
func NewNetns(ctx context.Context, opts cluster.Options) (_ *Cluster, err error) {
	ids, err := bridge.Servers(opts, "zookeeper", Available)
	if err != nil {
		return nil, err
	}
	label := opts.Label
	if label == "" {
		label = fmt.Sprintf("t%x", time.Now().UnixNano()&0xffffffff)
	}
	if err := bridge.CheckLabel(label); err != nil {
		return nil, err
	}
	links, err := bridge.LinkMode(ctx, opts.Plan, opts.Logger, label, "a delaying proxy per server pair and port")
	if err != nil {
		return nil, err
	}
	root, removeRoot := opts.DataRoot, false
	if root == "" {
		if root, err = os.MkdirTemp("", "polebench-netns-"+label+"-"); err != nil {
			return nil, err
		}
		removeRoot = true
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("netns: data root: %w", err)
	}
	n, err := bridge.Create(label, ids)
	if err != nil {
		if removeRoot {
			os.RemoveAll(root)
		}
		return nil, fmt.Errorf("netns: %w", err)
	}
	addrs := map[int]hostPorts{}
	for _, id := range ids {
		addrs[id] = hostPorts{Host: n.Addrs[id].String(), Client: cluster.ClientPort, Quorum: cluster.PeerPort, Election: cluster.ElectionPort}
	}
	z := newCluster(newEnsemble(opts, label, root, addrs), links, removeRoot, opts.WarmUp,
		func(id int, cmd *exec.Cmd) (*procs.Proc, error) { return bridge.Start(n.NS[id], cmd) },
		func() error {
			n.Close()
			_, err := bridge.Remove(label, ids)
			return err
		})
	defer func() {
		if err != nil {
			err = errors.Join(err, z.Close(context.WithoutCancel(ctx)))
		}
	}()
	switch links {
	case cluster.LinksUserSpace:
		if z.e.links, err = newProxies(z.e, opts.Plan, n.HostAddr().String()); err != nil {
			return nil, err
		}
		z.cuts = &z.e.links.set
	case cluster.LinksKernel:
		k, err := n.ApplyPlan(ctx, ids, opts.Plan)
		if err != nil {
			return nil, err
		}
		z.cuts = k
	}
	return z, z.start(ctx)
}
