package sim

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/replica"
)

// TestDenseFaults: the dense generator's schedules are the same for a seed, playable
// (playable), dense (a fault begins every 3 s at least, on average) and hold every
// shape it aims at the protocol.
func TestDenseFaults(t *testing.T) {
	topo := config(t, "two-dc", time.Second, 0, 1).Topology
	d := 30 * time.Second
	seen := map[string]int{}
	starts := 0
	for seed := uint64(1); seed <= 200; seed++ {
		fs := DenseFaults(topo, seed, d)
		if !reflect.DeepEqual(fs, DenseFaults(topo, seed, d)) {
			t.Fatalf("seed %d: two draws differ", seed)
		}
		playable(t, topo.Servers(), seed, fs, d)
		stops := map[time.Duration]int{}
		for _, f := range fs {
			seen[string(f.Kind)]++
			if f.Shape != "" {
				seen["shape "+strings.SplitN(f.Shape, ":", 2)[0]]++
			}
			if f.Stops() {
				stops[f.At]++
			}
			if f.Stops() || f.Cuts() || f.Kind == nemesis.Pause || f.Kind == nemesis.SlowDisk && f.Delay > 0 {
				starts++
			}
		}
		for _, n := range stops {
			if n > topo.N()/2 {
				seen["majority crashed at once"]++
			}
		}
	}
	if per := float64(200*(d-3*time.Second)) / float64(starts); per > float64(3*time.Second) {
		t.Errorf("a fault begins every %v on average, want at most 3s", time.Duration(per))
	}
	for _, k := range []string{"kill", "lose-unsynced", "torn-tail", "partition", "one-way", "isolate-leader", "pause", "slow-disk",
		"shape behind", "shape dc", "shape halves", "shape ring", "shape bridge", "majority crashed at once"} {
		if seen[k] == 0 {
			t.Errorf("200 schedules hold no %s: %v", k, seen)
		}
	}
}

// TestBrokenCaught: the fast form of the power table (polebench sim check
// --variants): servers broken on purpose, one at a time, are caught on fixed seeds of
// the dense schedules, and the sound replica passes the same seeds. The seeds are the
// first that catch each variant (the table in docs/faults.md).
func TestBrokenCaught(t *testing.T) {
	for _, c := range []struct {
		variant replica.Variant
		server  int
		seed    uint64
	}{
		{replica.SelfTwice, 5, 23},
		{replica.ApplyUncommitted, 3, 23},
		{replica.ForgetEpoch, 3, 126},
	} {
		t.Run(string(c.variant), func(t *testing.T) {
			cfg := checkConfig(t, c.seed)
			cfg.Faults, cfg.DiskLatency = DenseFaults(cfg.Topology, c.seed, cfg.Duration), SyncDiskLatency
			_, unsafe, live := Check(context.Background(), cfg)
			if unsafe != nil || live != nil {
				t.Fatalf("the sound replica on seed %d: %v %v", c.seed, unsafe, live)
			}
			cfg.Broken = map[int]replica.Variant{c.server: c.variant}
			if _, unsafe, _ = Check(context.Background(), cfg); unsafe == nil {
				t.Fatalf("p%d broken (%s) passed seed %d: %v", c.server, c.variant, c.seed, cfg.Faults)
			}
			t.Logf("caught: %v", strings.SplitN(unsafe.Error(), "\n", 2)[0])
		})
	}
}
