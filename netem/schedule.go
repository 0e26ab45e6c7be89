package netem

import (
	"context"
	"fmt"
	"time"
)

// Instant is one change of a plan's schedules on one server's egress, as RunSchedule
// applied it: the runner records each as an event.
type Instant struct {
	Self    int           // the server whose egress changed
	At      time.Duration // the planned instant, since the start of the run
	Applied time.Time     // when the kernel acknowledged the change (zero if it failed)
	Links   [][2]int      // the links (from, to) that changed
	Err     error
}

// RunSchedule applies the schedules of p's links from tg.Self with the kernel: at each
// instant start+At it changes the netem leaves in place (netlink change: the leaf
// handles stay, so queued packets are kept) to p.At(At), sending the zero attributes
// too (netemParams.Reset), and calls report (if not nil) with the instant, also when
// the change failed. It returns when the last instant is applied, or with ctx's error;
// a failed change is reported and the schedule goes on. Apply(p) installs the state
// before the first instant.
func RunSchedule(ctx context.Context, tg Target, p Plan, start time.Time, report func(Instant)) error {
	return PlaySchedule(ctx, tg.Self, p, start, func(at time.Duration) error { return Change(ctx, tg, p.At(at)) }, report)
}

// PlaySchedule is RunSchedule with the change its caller's: at each instant that
// changes a link of self's egress it calls change with the instant (a backend that
// also cuts links installs p.At(at) with its cuts). It reports every instant.
func PlaySchedule(ctx context.Context, self int, p Plan, start time.Time, change func(at time.Duration) error, report func(Instant)) error {
	return runSchedule(ctx, self, p, start, change, sleepUntil, time.Now, report)
}

// Change installs p in place of the links tg has: like Apply, but sending every netem
// attribute, the zero ones too, so that a leaf changed in place forgets its old rate,
// reorder and correlations (what a schedule's change needs).
func Change(ctx context.Context, tg Target, p Plan) error { return apply(ctx, tg, p.At(0), true) }

// sleepUntil waits for t or ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// runSchedule is RunSchedule with its kernel, clock and sleep given (tests).
func runSchedule(ctx context.Context, self int, p Plan, start time.Time, change func(time.Duration) error,
	sleep func(context.Context, time.Time) error, now func() time.Time, report func(Instant)) error {
	for _, at := range p.Instants() {
		var mine [][2]int
		for _, l := range p.Changed(at) {
			if l[0] == self {
				mine = append(mine, l)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if err := sleep(ctx, start.Add(at)); err != nil {
			return err
		}
		in := Instant{Self: self, At: at, Links: mine}
		if err := change(at); err != nil {
			in.Err = fmt.Errorf("netem: schedule at %v: %w", at, err)
		} else {
			in.Applied = now()
		}
		if report != nil {
			report(in)
		}
	}
	return nil
}
