// Package nemesis is the run's fault schedule and its player (Jepsen's nemesis): typed
// faults at instants from the start of the load, played against whatever can kill and
// restart servers (a real backend's cluster, or the simulator's) on a clock that is an
// input, and recorded as they were executed, so analysis never re-discovers the crash
// by matching strings.
package nemesis

import (
	"context"
	"fmt"
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
)

// Fault is one scheduled fault.
type Fault struct {
	At     time.Duration // from the start of the load
	Kind   Kind
	Server int
	// Source is the spec field that asked for it (crash_at, outdate[0].kill_at, ...).
	Source string
}

// Stops says whether the fault takes its server down.
func (f Fault) Stops() bool { return f.Kind == Crash || f.Kind == Kill }

func (f Fault) String() string {
	return fmt.Sprintf("%s p%d at %v", f.Kind, f.Server, f.At)
}

// Target is what the nemesis acts on; cluster.Cluster is one.
type Target interface {
	Kill(ctx context.Context, id int) error
	Restart(ctx context.Context, id int) error
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
