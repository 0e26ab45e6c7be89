package netns

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/netem"
)

// Down removes what netns clusters labelled label left behind (every polebench netns
// cluster when label is empty): the processes inside their namespaces, then the host
// veths, bridges, veths and namespaces. It lists what it removed.
func Down(ctx context.Context, label string) ([]string, error) { return bridge.Down(ctx, label) }

// kernelOp runs op on every server of the cluster labelled label, after checking
// that the kernel can run netem at all.
func kernelOp(ctx context.Context, label string, op func(bridge.Server, netem.Target) error) error {
	if err := bridge.CheckRoot(); err != nil {
		return err
	}
	if err := netem.Probe(ctx); err != nil {
		return fmt.Errorf("netem: this kernel cannot run the kernel link plan (netns clusters here use poled's user-space links): %w", err)
	}
	_, servers, err := bridge.Find(label)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range servers {
			s.NS.Close()
		}
	}()
	addrs := map[int]netip.Addr{}
	for _, s := range servers {
		addrs[s.ID] = s.Addr
	}
	for _, s := range servers {
		if err := op(s, netem.Target{NS: s.NS, Dev: bridge.Dev, Self: s.ID, Addrs: addrs}); err != nil {
			return fmt.Errorf("p%d (%s): %w", s.ID, s.Name, err)
		}
	}
	return nil
}

// Apply installs plan with the kernel's netem in every server namespace of the
// running netns cluster labelled label (the only one when label is empty).
func Apply(ctx context.Context, label string, plan netem.Plan) error {
	return kernelOp(ctx, label, func(s bridge.Server, tg netem.Target) error {
		if !slices.Contains(plan.Servers(), s.ID) {
			return fmt.Errorf("the plan has no links for p%d (it covers %v)", s.ID, plan.Servers())
		}
		return netem.Apply(ctx, tg, plan)
	})
}

// Show describes the netem tree of every server namespace of the cluster.
func Show(ctx context.Context, label string) (string, error) {
	var b strings.Builder
	err := kernelOp(ctx, label, func(s bridge.Server, tg netem.Target) error {
		out, err := netem.Show(ctx, tg)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "p%d %s %s %s", s.ID, s.Name, s.Addr, out)
		if !strings.HasSuffix(out, "\n") {
			b.WriteByte('\n')
		}
		return nil
	})
	return b.String(), err
}

// Clear removes the netem tree Apply installed from every server namespace.
func Clear(ctx context.Context, label string) error {
	return kernelOp(ctx, label, func(_ bridge.Server, tg netem.Target) error {
		return netem.Clear(ctx, tg)
	})
}
