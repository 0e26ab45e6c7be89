// Package nemesis is the run's fault schedule and its player (Jepsen's nemesis): typed
// faults at instants from the start of the load, played against whatever can kill and
// restart servers (a real backend's cluster, or the simulator's) on a clock that is an
// input, and recorded as they were executed, so analysis never re-discovers the crash
// by matching strings.
package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kind is what a fault does.
type Kind string

const (
	// Crash kills the initial leader: the instant the run's "after" window counts from.
	Crash Kind = "crash"
	// Kill stops a server at once, like SIGKILL.
	Kill Kind = "kill"
	// Restart starts a killed server again from its data directory.
	Restart Kind = "restart"
	// Partition cuts every link between servers of different groups (Pairs), both
	// ways; Isolate cuts one server from all the others.
	Partition Kind = "partition"
	Isolate   Kind = "isolate"
	// Heal restores every link the nemesis cut.
	Heal Kind = "heal"
	// Outdate cuts Server's broadcast channel (not elections, not heartbeats) so that
	// no leader can bring it up to date; Rejoin restores it (at the crash).
	Outdate Kind = "outdate"
	Rejoin  Kind = "rejoin"
)

// Fault is one scheduled fault.
type Fault struct {
	At     time.Duration // from the start of the load
	Kind   Kind
	Server int
	// Pairs are the links a Partition, Isolate, Outdate or Rejoin cuts or restores.
	Pairs [][2]int
	// BroadcastOnly: the broadcast channel alone (Outdate, Rejoin).
	BroadcastOnly bool
	// Source is the spec field that asked for it (crash_at, outdate[0].kill_at, ...).
	Source string
}

// Stops says whether the fault takes its server down.
func (f Fault) Stops() bool { return f.Kind == Crash || f.Kind == Kill }

// Cuts says whether the fault cuts links; Restores whether it restores them.
func (f Fault) Cuts() bool     { return f.Kind == Partition || f.Kind == Isolate || f.Kind == Outdate }
func (f Fault) Restores() bool { return f.Kind == Heal || f.Kind == Rejoin }

func (f Fault) String() string {
	switch {
	case f.Kind == Partition:
		return fmt.Sprintf("partition %v at %v", f.Pairs, f.At)
	case f.Kind == Heal:
		return fmt.Sprintf("heal at %v", f.At)
	}
	return fmt.Sprintf("%s p%d at %v", f.Kind, f.Server, f.At)
}

// Pairs lists the links between servers of different groups, each once (a < b).
func Pairs(groups [][]int) [][2]int {
	var out [][2]int
	for i, g := range groups {
		for _, h := range groups[i+1:] {
			for _, a := range g {
				for _, b := range h {
					out = append(out, [2]int{min(a, b), max(a, b)})
				}
			}
		}
	}
	return out
}

// Target is what the nemesis acts on; cluster.Cluster is one.
type Target interface {
	Kill(ctx context.Context, id int) error
	Restart(ctx context.Context, id int) error
}

// Partitioner is a Target that can cut links: every message between a and b of each
// pair is dropped both ways while cut (the broadcast channel alone with broadcastOnly).
type Partitioner interface {
	SetLinks(ctx context.Context, pairs [][2]int, cut, broadcastOnly bool) error
}

// Clock is the run's clock: the time since the load started, and a wait until an
// instant of it. Real runs use Wall; the simulator supplies virtual time.
type Clock interface {
	Now() time.Duration
	// WaitUntil returns once Now() >= at, or with ctx's error.
	WaitUntil(ctx context.Context, at time.Duration) error
}

// Wall is real time from Start.
type Wall struct{ Start time.Time }

func (w Wall) Now() time.Duration { return time.Since(w.Start) }

func (w Wall) WaitUntil(ctx context.Context, at time.Duration) error {
	t := time.NewTimer(time.Until(w.Start.Add(at)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Executed is a fault as it was carried out: when it was issued on the run's clock
// (a kill counts from its issue, not from when the backend confirmed it) and how it
// went.
type Executed struct {
	Fault
	Issued time.Duration
	Err    error
}

// Observer hears about each fault around its execution; the runner uses it to save a
// victim's timeline before it dies and to tell the workload. Either func may be nil.
type Observer struct {
	Before func(ctx context.Context, f Fault)
	After  func(ctx context.Context, e Executed)
}

// Play executes faults, sorted by At, each at its instant, and returns what it did.
// It stops early, returning what was executed so far, when ctx ends.
func Play(ctx context.Context, clock Clock, target Target, faults []Fault, obs Observer) []Executed {
	var done []Executed
	// What is cut now, so that Heal restores exactly that.
	cut := map[[2]int]bool{} // pair -> broadcast only
	links := func(f Fault, on bool) error {
		p, ok := target.(Partitioner)
		if !ok {
			return fmt.Errorf("%s: this cluster cannot cut links", f.Kind)
		}
		return p.SetLinks(ctx, f.Pairs, on, f.BroadcastOnly)
	}
	for _, f := range faults {
		if clock.WaitUntil(ctx, f.At) != nil {
			return done
		}
		if obs.Before != nil {
			obs.Before(ctx, f)
		}
		e := Executed{Fault: f, Issued: clock.Now()}
		switch f.Kind {
		case Crash, Kill:
			e.Err = target.Kill(ctx, f.Server)
		case Restart:
			e.Err = target.Restart(ctx, f.Server)
		case Partition, Isolate, Outdate:
			if e.Err = links(f, true); e.Err == nil {
				for _, p := range f.Pairs {
					cut[p] = f.BroadcastOnly
				}
			}
		case Rejoin:
			if e.Err = links(f, false); e.Err == nil {
				for _, p := range f.Pairs {
					if cut[p] { // a full cut (a partition) stays until the heal
						delete(cut, p)
					}
				}
			}
		case Heal:
			var errs []error
			for _, only := range []bool{true, false} {
				var pairs [][2]int
				for p, o := range cut {
					if o == only {
						pairs = append(pairs, p)
					}
				}
				if len(pairs) > 0 {
					slices.SortFunc(pairs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
					errs = append(errs, links(Fault{Kind: Heal, Pairs: pairs, BroadcastOnly: only}, false))
				}
			}
			if e.Err = errors.Join(errs...); e.Err == nil {
				clear(cut)
			}
		default:
			e.Err = fmt.Errorf("unknown fault kind %q", f.Kind)
		}
		done = append(done, e)
		if obs.After != nil {
			obs.After(ctx, e)
		}
	}
	return done
}

// CrashAt is when the initial leader's crash was issued, and whether it happened.
func CrashAt(done []Executed) (time.Duration, bool) {
	for _, e := range done {
		if e.Kind == Crash && e.Err == nil {
			return e.Issued, true
		}
	}
	return 0, false
}
