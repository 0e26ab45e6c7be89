// Package controller runs a placement policy beside a cluster, as a user would deploy
// one: each round it observes the members through the system's own API, decides with
// package placement, and moves the leadership when the policy says so. It keeps no
// state a restart would lose (every round decides from what it observes), so it is
// idempotent and a restarted controller resumes where the cluster stands.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/topology"
)

// System is what the controller needs of a cluster: one round's view of its members,
// and a leadership transfer.
type System interface {
	Observe(ctx context.Context) (placement.View, error)
	Move(ctx context.Context, from, to int) error
}

// Decision is one round's decision as the controller reports it: when (the host's
// monotonic clock, as the harness's instants are), and what came of a move.
type Decision struct {
	At time.Duration `json:"at_ns"`
	placement.Decision
	Moved string `json:"moved,omitempty"` // "ok", or the move's error
}

// Config is a controller's.
type Config struct {
	Topology *topology.Topology
	Policy   placement.Policy
	System   System
	// Interval is how often it observes (DefaultInterval when 0); after a move it waits
	// Settle (DefaultSettle when 0) before it decides again, so that a transfer under
	// way is not asked for twice.
	Interval, Settle time.Duration
	MaxLag           uint64 // placement.DefaultMaxLag when 0
	// Keep, if set, is a server the controller leaves leading while it leads (a run's
	// initial leader, so that the window before its crash measures it): placement
	// after the elections that follow.
	Keep int
	// Now is the clock decisions are stamped with (the host's monotonic clock).
	Now func() time.Duration
	// Report gets every decision that differs from the last one reported, and every move.
	Report func(Decision)
	Log    *slog.Logger
}

// Defaults: a round every 200 ms finds a new leader within a few of etcd's
// heartbeats; a transfer takes a round trip and an election, well under a second.
const (
	DefaultInterval = 200 * time.Millisecond
	DefaultSettle   = time.Second
)

// Run decides and moves until ctx ends.
func Run(ctx context.Context, c Config) error {
	if err := c.Policy.Check(c.Topology.N()); err != nil {
		return err
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Settle <= 0 {
		c.Settle = DefaultSettle
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	var last *placement.Decision
	for {
		wait := c.Interval
		d, err := Round(ctx, c)
		switch {
		case err != nil:
			c.Log.Warn("placement: round", "err", err)
		case last == nil || changed(*last, d.Decision) || d.Move:
			c.Report(d)
			last = &d.Decision
			if d.Move {
				wait = c.Settle
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Round is one observation, decision and, when the policy says so, move.
func Round(ctx context.Context, c Config) (Decision, error) {
	v, err := c.System.Observe(ctx)
	if err != nil {
		return Decision{}, fmt.Errorf("observe: %w", err)
	}
	pd, err := placement.Decide(c.Topology, c.Policy, v, c.MaxLag)
	if err != nil {
		return Decision{}, err
	}
	if pd.Move && pd.Leader == c.Keep {
		pd.Move, pd.Why = false, fmt.Sprintf("p%d is kept where it leads (%s)", c.Keep, pd.Why)
	}
	d := Decision{At: c.Now(), Decision: pd}
	if pd.Move {
		d.Moved = "ok"
		if err := c.System.Move(ctx, pd.Leader, pd.Choice); err != nil {
			d.Moved = err.Error()
		}
	}
	return d, nil
}

// changed says whether a decision differs from the last one reported in what a reader
// of the run's events would want to see.
func changed(a, b placement.Decision) bool {
	return a.Leader != b.Leader || a.Choice != b.Choice || a.Move != b.Move || a.Why != b.Why
}
