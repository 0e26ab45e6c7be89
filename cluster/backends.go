package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polebench/polebench/cluster/backend"
)

// Backends lists the backends New knows.
func Backends() []string { return backend.Names() }

// New starts a cluster on the named backend ("" is local, the embedded default).
func New(ctx context.Context, name string, opts Options) (Cluster, error) {
	if name == "" {
		name = backend.Local
	}
	if !slices.Contains(backend.Names(), name) {
		return nil, fmt.Errorf("unknown backend %q (known: %v)", name, Backends())
	}
	if !backend.Runs(name, opts.Flavor) {
		return nil, fmt.Errorf("flavor %s does not run on backend %q: only on %s (see the README's flavors section)", opts.Flavor, name, strings.Join(backend.For(opts.Flavor), ", "))
	}
	// The servers of some backends run in another working directory (a network
	// namespace's process, a container's mount): a relative data root means nothing there.
	if opts.DataRoot != "" {
		abs, err := filepath.Abs(opts.DataRoot)
		if err != nil {
			return nil, fmt.Errorf("data root: %w", err)
		}
		opts.DataRoot = abs
	}
	if opts.Flavor == ZooKeeper {
		if opts.WarmUp == 0 {
			opts.WarmUp = ZooKeeperWarmUp
		}
		if name == backend.Netns {
			return NewZooKeeperNetns(ctx, opts)
		}
		return NewZooKeeperLocal(ctx, opts)
	}
	switch name {
	case backend.Netns:
		return NewNetns(ctx, opts)
	case backend.Docker:
		return NewDocker(ctx, opts)
	case backend.Swarm:
		return NewSwarm(ctx, opts)
	case backend.Sim:
		return nil, fmt.Errorf("backend %q simulates a run (polebench run --backend sim); it has no cluster to bring up", name)
	}
	return NewLocal(ctx, opts)
}

// Down removes what crashed harnesses left behind: network namespaces, links and
// processes of the netns backend, ZooKeeper JVMs of the local backend, containers,
// networks and volumes of the docker backend, and services, configs, overlay networks
// and the nodes' containers and volumes of the swarm backend (the local backend lives
// and dies with the process); label "" means every polebench run's.
func Down(ctx context.Context, label string) ([]string, error) {
	var removed []string
	var errs []error
	n, err := NetnsDown(ctx, label)
	removed = append(removed, n...)
	if err != nil {
		errs = append(errs, fmt.Errorf("netns: %w", err))
	}
	z, err := zkDown(label)
	removed = append(removed, z...)
	if err != nil {
		errs = append(errs, fmt.Errorf("zookeeper: %w", err))
	}
	d, err := DockerDown(ctx, label)
	removed = append(removed, d...)
	if err != nil {
		errs = append(errs, fmt.Errorf("docker: %w", err))
	}
	w, err := SwarmDown(ctx, label)
	removed = append(removed, w...)
	if err != nil {
		errs = append(errs, fmt.Errorf("swarm: %w", err))
	}
	return removed, errors.Join(errs...)
}
