package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/polebench/polebench/cluster/backend"
)

// Backends lists the backends New knows.
func Backends() []string { return backend.Names() }

// New starts a cluster on the named backend ("" is local, the embedded default).
func New(ctx context.Context, name string, opts Options) (Cluster, error) {
	switch name {
	case "", backend.Local:
		return NewLocal(ctx, opts)
	case backend.Netns:
		return NewNetns(ctx, opts)
	case backend.Docker:
		return NewDocker(ctx, opts)
	}
	return nil, fmt.Errorf("unknown backend %q (known: %v)", name, Backends())
}

// Down removes what crashed harnesses left behind: network namespaces, links and
// processes of the netns backend, and containers, networks and volumes of the docker
// backend (the local backend lives and dies with the process); label "" means every
// polebench run's.
func Down(ctx context.Context, label string) ([]string, error) {
	var removed []string
	var errs []error
	n, err := NetnsDown(ctx, label)
	removed = append(removed, n...)
	if err != nil {
		errs = append(errs, fmt.Errorf("netns: %w", err))
	}
	d, err := DockerDown(ctx, label)
	removed = append(removed, d...)
	if err != nil {
		errs = append(errs, fmt.Errorf("docker: %w", err))
	}
	return removed, errors.Join(errs...)
}
