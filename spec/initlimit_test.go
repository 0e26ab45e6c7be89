package spec

import (
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
)

// TestInitLimitFor: the default grows with the state over the slowest rate, and a
// spec's own init_limit wins.
func TestInitLimitFor(t *testing.T) {
	const mbit = 100e6 / 8 // bytes/s
	plan := func(rates ...uint64) netem.Plan {
		var p netem.Plan
		for _, r := range rates {
			p.Links = append(p.Links, netem.Link{RateBytesPerSec: r})
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		preloadMB int
		limit     time.Duration
		plan      netem.Plan
		want      time.Duration
	}{
		{"no rate: ZooKeeper's sample", 250, 0, plan(0, 0), DefaultInitLimit},
		// 250 MiB + 1000 keys of 1 kB at 100 Mbit/s: 21.05 s; twice, rounded: 42 s.
		{"250 MB at 100 Mbit/s", 250, 0, plan(0, mbit, 10*mbit), DefaultInitLimit + 42*time.Second},
		// 1000 keys of 1 kB alone: 0.08 s, twice rounds to nothing.
		{"no preload", 0, 0, plan(mbit), DefaultInitLimit},
		{"set", 250, 5 * time.Second, plan(mbit), 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Spec{PreloadMB: tc.preloadMB, InitLimit: tc.limit, Workload: Workload{Keys: DefaultKeys, PayloadBytes: DefaultPayloadBytes}}
			if got := s.InitLimitFor(tc.plan); got != tc.want {
				t.Errorf("InitLimitFor = %v, want %v", got, tc.want)
			}
		})
	}
}
