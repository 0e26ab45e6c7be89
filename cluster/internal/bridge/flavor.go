package bridge

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/netem"
)

// What a flavor's netns cluster (its own servers, one per namespace) checks and
// decides before it starts, the same for every flavor.

// Servers checks root, the flavor's binaries (available) and a topology that fits the
// bridge's /24, and returns the servers' ids.
func Servers(opts cluster.Options, flavor string, available func() error) ([]int, error) {
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	if err := available(); err != nil {
		return nil, err
	}
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, fmt.Errorf("%s: no topology", flavor)
	}
	ids := opts.Topology.Servers()
	if len(ids) > MaxServers {
		return nil, fmt.Errorf("netns: %d servers, at most %d", len(ids), MaxServers)
	}
	return ids, nil
}

// LinkMode says how plan is carried: not at all if it is empty, by the kernel's netem
// where netem.Probe passes, else in user space (fallback says how, in the warning).
func LinkMode(ctx context.Context, plan netem.Plan, log *slog.Logger, label, fallback string) (string, error) {
	if len(plan.Links) == 0 {
		return cluster.LinksNone, nil
	}
	if err := plan.Validate(); err != nil {
		return "", fmt.Errorf("netns: link plan: %w", err)
	}
	err := netem.Probe(ctx)
	switch {
	case err == nil:
		return cluster.LinksKernel, nil
	case ctx.Err() != nil:
		return "", err
	}
	if log != nil {
		log.Warn("kernel netem unavailable, using the user-space fallback: "+fallback, "label", label, "reason", err.Error())
	}
	return cluster.LinksUserSpace, nil
}

// ApplyPlan applies plan by the kernel's netem in the namespaces of ids.
func (n *Net) ApplyPlan(ctx context.Context, ids []int, plan netem.Plan) error {
	for _, id := range ids {
		t := netem.Target{NS: n.NS[id], Dev: Dev, Self: id, Addrs: n.Addrs}
		if err := netem.Apply(ctx, t, plan); err != nil {
			return fmt.Errorf("netns: p%d: %w", id, err)
		}
	}
	return nil
}
