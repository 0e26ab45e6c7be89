package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

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

// Kernel is a plan the kernel's netem applies in the namespaces of a flavor's servers,
// with the cuts made since: a cut link is a netem leaf that drops every packet
// (netem.Plan.CutOneWay), as poled's netns backend cuts its own.
type Kernel struct {
	n    *Net
	ids  []int
	plan netem.Plan
	mu   sync.Mutex
	cut  map[[2]int]bool // (a, b): a's packets to b are dropped
}

// ApplyPlan applies plan by the kernel's netem in the namespaces of ids.
func (n *Net) ApplyPlan(ctx context.Context, ids []int, plan netem.Plan) (*Kernel, error) {
	k := &Kernel{n: n, ids: ids, plan: plan, cut: map[[2]int]bool{}}
	return k, k.apply(ctx)
}

// Cut drops (cut) or lets through again the packets each pair's first server sends
// its second, and with both the other way too, in every namespace (they outlive their
// processes: a dead server's tree is updated as well).
func (k *Kernel) Cut(ctx context.Context, pairs [][2]int, both, cut bool) error {
	k.mu.Lock()
	for _, p := range pairs {
		ds := [][2]int{p}
		if both {
			ds = append(ds, [2]int{p[1], p[0]})
		}
		for _, d := range ds {
			if cut {
				k.cut[d] = true
			} else {
				delete(k.cut, d)
			}
		}
	}
	k.mu.Unlock()
	return k.apply(ctx)
}

func (k *Kernel) apply(ctx context.Context) error {
	k.mu.Lock()
	plan := k.plan.CutOneWay(slices.Collect(maps.Keys(k.cut)))
	k.mu.Unlock()
	var errs []error
	for _, id := range k.ids {
		t := netem.Target{NS: k.n.NS[id], Dev: Dev, Self: id, Addrs: k.n.Addrs}
		if err := netem.Apply(ctx, t, plan); err != nil {
			errs = append(errs, fmt.Errorf("netns: p%d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
