package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/polebench/polebench/netem"
)

// NewZooKeeperNetns starts opts.Topology's servers as ZooKeeper JVMs, one per network
// namespace on the netns backend's bridge, each on ZooKeeper's usual ports at its own
// address. The plan is applied by the kernel's netem when netem.Probe passes; else by
// user-space proxies that listen on the host's address on the bridge.
func NewZooKeeperNetns(ctx context.Context, opts Options) (_ *ZKCluster, err error) {
	if err := netnsCheckRoot(); err != nil {
		return nil, err
	}
	if err := ZooKeeperAvailable(); err != nil {
		return nil, err
	}
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, errors.New("zookeeper: no topology")
	}
	ids := opts.Topology.Servers()
	if len(ids) > netnsMaxServers {
		return nil, fmt.Errorf("netns: %d servers, at most %d", len(ids), netnsMaxServers)
	}
	label := opts.Label
	if label == "" {
		label = fmt.Sprintf("t%x", time.Now().UnixNano()&0xffffffff)
	}
	if err := netnsCheckLabel(label); err != nil {
		return nil, err
	}
	links := LinksNone
	if len(opts.Plan.Links) > 0 {
		if err := opts.Plan.Validate(); err != nil {
			return nil, fmt.Errorf("netns: link plan: %w", err)
		}
		links = LinksKernel
		if err := netem.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			links = LinksUserSpace
			if opts.Logger != nil {
				opts.Logger.Warn("netns: kernel netem unavailable, using the user-space fallback: a delaying proxy per server pair and port",
					"label", label, "reason", err.Error())
			}
		}
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
	n, err := netnsCreate(label, ids)
	if err != nil {
		if removeRoot {
			os.RemoveAll(root)
		}
		return nil, fmt.Errorf("netns: %w", err)
	}
	addrs := map[int]zkAddr{}
	for _, id := range ids {
		addrs[id] = zkAddr{Host: n.addrs[id].String(), Client: NetnsClientPort, Quorum: NetnsPeerPort, Election: NetnsElectionPort}
	}
	z := newZKCluster(newZKEnsemble(opts, label, root, addrs), links, removeRoot, opts.WarmUp,
		func(id int, cmd *exec.Cmd) (*nsProc, error) { return startInNetns(n.ns[id], cmd) },
		func() error {
			n.close()
			names := []string{netnsName(label, 0)}
			for _, id := range ids {
				names = append(names, netnsName(label, id))
			}
			_, err := netnsTeardown(label, names, true)
			return err
		})
	defer func() {
		if err != nil {
			err = errors.Join(err, z.Close(context.WithoutCancel(ctx)))
		}
	}()
	switch links {
	case LinksUserSpace:
		if z.e.links, err = newZKLinks(z.e, opts.Plan, n.hostAddr().String()); err != nil {
			return nil, err
		}
	case LinksKernel:
		if err := applyKernelLinks(ctx, n, ids, opts.Plan); err != nil {
			return nil, fmt.Errorf("netns: %w", err)
		}
	}
	return z, z.start(ctx)
}
