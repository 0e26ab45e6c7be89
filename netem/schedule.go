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
	return runSchedule(ctx, tg.Self, p, start, func(q Plan) error { return apply(ctx, tg, q, true) },
		sleepUntil, time.Now, report)
}

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
func runSchedule(ctx context.Context, self int, p Plan, start time.Time, applyPlan func(Plan) error,
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
		if err := applyPlan(p.At(at)); err != nil {
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
