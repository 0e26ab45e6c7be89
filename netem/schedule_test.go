package netem

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRunSchedule: the kernel schedule applies, at each instant that changes a link
// of its server, the plan as it stands then, reports every instant (failed ones too),
// and skips the instants of other servers' links. Virtual clock: sleep records.
func TestRunSchedule(t *testing.T) {
	l12 := Link{From: 1, To: 2, Delay: 10 * time.Millisecond, Dist: DistPareto}
	l21 := Link{From: 2, To: 1, Delay: 10 * time.Millisecond, Dist: DistPareto}
	slow, lossy, other := l12, l12, l21
	slow.Delay = 50 * time.Millisecond
	lossy.Delay, lossy.LossPct = 50*time.Millisecond, 1
	other.RateBytesPerSec = 1e6
	p := Plan{Links: []Link{l12, l21}, Schedules: []LinkSchedule{
		{From: 1, To: 2, Steps: []Step{{At: 10 * time.Second, Link: slow}, {At: 30 * time.Second, Link: lossy}}},
		{From: 2, To: 1, Steps: []Step{{At: 20 * time.Second, Link: other}}},
	}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000, 0)
	var slept []time.Duration
	var applied []Link
	var reports []Instant
	clock := start
	fail := true
	err := runSchedule(context.Background(), 1, p, start,
		func(at time.Duration) error {
			l, _ := p.At(at).Link(1, 2)
			applied = append(applied, l)
			if fail {
				fail = false
				return errors.New("no netem")
			}
			return nil
		},
		func(_ context.Context, t time.Time) error { slept = append(slept, t.Sub(start)); clock = t; return nil },
		func() time.Time { return clock },
		func(in Instant) { reports = append(reports, in) })
	if err != nil {
		t.Fatal(err)
	}
	if len(slept) != 2 || slept[0] != 10*time.Second || slept[1] != 30*time.Second {
		t.Errorf("woke at %v; want 10s and 30s (20s is p2's link)", slept)
	}
	if len(applied) != 2 || applied[0] != slow || applied[1] != lossy {
		t.Errorf("applied %+v", applied)
	}
	if len(reports) != 2 || reports[0].Err == nil || !reports[0].Applied.IsZero() ||
		reports[1].Err != nil || reports[1].Applied != start.Add(30*time.Second) || reports[1].Links[0] != [2]int{1, 2} {
		t.Errorf("reports %+v", reports)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runSchedule(ctx, 1, p, start, func(time.Duration) error { return nil }, sleepUntil, time.Now, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled schedule: %v", err)
	}
}
