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
// handles stay, so queued packets are kept) to p.At(At), and calls report (if not nil)
// with the instant, also when the change failed. It returns when the last instant is
// applied, or with ctx's error; a failed change is reported and the schedule goes on.
// Apply(p) installs the state before the first instant.
func RunSchedule(ctx context.Context, tg Target, p Plan, start time.Time, report func(Instant)) error {
	for _, at := range p.Instants() {
		var mine [][2]int
		for _, l := range p.Changed(at) {
			if l[0] == tg.Self {
				mine = append(mine, l)
			}
		}
		if len(mine) == 0 {
			continue
		}
		t := time.NewTimer(time.Until(start.Add(at)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		in := Instant{Self: tg.Self, At: at, Links: mine}
		if err := apply(ctx, tg, p.At(at), true); err != nil {
			in.Err = fmt.Errorf("netem: schedule at %v: %w", at, err)
		} else {
			in.Applied = time.Now()
		}
		if report != nil {
			report(in)
		}
	}
	return nil
}
