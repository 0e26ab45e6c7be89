package sim

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/workload"
)

// TestLinkSchedule: the simulator follows a link schedule. two-dc with p5 leading
// throughout: a D1 write goes over the D1-D2 link once each way, so when the link's
// RTT goes from 20.75 ms to 100 ms at 10 s, D1's mean latency rises by 79.25 ms
// (within 2 % of the new RTT), from within one heartbeat (1 s) of the instant.
func TestLinkSchedule(t *testing.T) {
	const d, at = 20 * time.Second, 10 * time.Second
	cfg := config(t, "two-dc", d, time.Hour, 1)
	cfg.Faults = nil
	for _, l := range cfg.Plan.Links {
		if (l.From <= 2) != (l.To <= 2) { // D1 = {p1, p2}
			up := l
			up.Delay, up.Jitter = 50*time.Millisecond, time.Millisecond
			cfg.Plan.Schedules = append(cfg.Plan.Schedules, netem.LinkSchedule{From: l.From, To: l.To, Steps: []netem.Step{{At: at, Link: up}}})
		}
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Verification.Err(); err != nil {
		t.Fatal(err)
	}
	before := meanMS(res.Records, "D1", 3*time.Second, at)
	after := meanMS(res.Records, "D1", at+time.Second, d)
	if rise := after - before; math.Abs(rise-(100-20.75)) > 0.02*100 {
		t.Errorf("D1 mean %.2f ms before, %.2f after: rise %.2f, want 79.25 within 2 %% of 100 ms", before, after, rise)
	}
	first := time.Duration(-1)
	for _, r := range res.Records {
		if r.DC == "D1" && r.Outcome == workload.OK && r.Latency() > 60*time.Millisecond && (first < 0 || r.Intended < first) {
			first = r.Intended
		}
	}
	if first < at-30*time.Millisecond || first > at+time.Second {
		t.Errorf("first slow D1 write intended at %v, want within one heartbeat of %v", first, at)
	}
}

// TestLinkRefused: a plan the user-space lines cannot emulate stops the simulator.
func TestLinkRefused(t *testing.T) {
	cfg := config(t, "two-dc", 5*time.Second, time.Hour, 1)
	cfg.Plan.Links[0].DuplicatePct = 1
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("sim ran a plan with duplicates: %v", err)
	}
}
