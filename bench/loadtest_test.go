package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/etcd"
	"github.com/polebench/polebench/cluster/zookeeper"
)

// TestBenchFlavors is `polebench bench --flavor poled,zookeeper,etcd --servers 3` on a
// short setting: every flavor as separate processes on loopback, each written through
// its own protocol by the same loop, closed loop, and the open loop (the same loop,
// paced) on poled and etcd (ZooKeeper's JVMs would cost CI half a minute more to show
// the pacer again); every window has writes and sane quantiles, the table compares
// poled with each other flavor, and bench.json holds a sample per window for every
// metric.
func TestBenchFlavors(t *testing.T) {
	for _, available := range []func() error{zookeeper.Available, etcd.Available} {
		if err := available(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("real ZooKeeper and etcd needed under CI: %v", err)
			}
			t.Skip(err)
		}
	}
	if testing.Short() {
		t.Skip("starts two clusters; -short skips it")
	}
	for _, mode := range []string{Closed, Open} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			flavors := []string{backend.FlavorPoled, backend.FlavorZooKeeper, etcd.Flavor}
			if mode == Open {
				flavors = []string{backend.FlavorPoled, etcd.Flavor}
			}
			cfg := Config{Flavors: flavors, Servers: []int{3}, Mode: mode,
				Rate: 300, Clients: 8, Warmup: 500 * time.Millisecond, Duration: 1500 * time.Millisecond, Repetitions: 2}
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := Setting{Servers: 3}
			for _, f := range cfg.Flavors {
				ws := res.Runs[s][f]
				if len(ws) != cfg.Repetitions {
					t.Fatalf("%s: %d windows, want 2", f, len(ws))
				}
				for _, w := range ws {
					if w.Writes == 0 || w.WritesPerSec <= 0 || !(w.P50MS > 0 && w.P50MS <= w.P99MS && w.P99MS <= w.P999MS) {
						t.Errorf("%s: window %+v", f, w)
					}
					// The schedule caps an open loop, however fast the servers.
					if mode == Open && w.WritesPerSec > 330 {
						t.Errorf("%s: open loop at 300 writes/s achieved %.0f", f, w.WritesPerSec)
					}
				}
			}
			var b strings.Builder
			if err := res.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + b.String())
			for _, other := range flavors[1:] {
				row := "poled/" + other
				if !strings.Contains(b.String(), row) || !strings.Contains(b.String(), "p=") {
					t.Errorf("no comparison row %s in the table:\n%s", row, b.String())
				}
			}
			// The rate is the open loop's; a closed loop given one does not claim it.
			if got := strings.Contains(b.String(), "at 300 writes/s in all"); got != (mode == Open) {
				t.Errorf("%s loop: the table's note mentions the rate: %v\n%s", mode, got, b.String())
			}
			f := res.Bench(benchdata.Env{})
			if len(f.Metrics) != len(cfg.Flavors)*len(metrics) {
				t.Fatalf("%d metrics in bench.json, want %d", len(f.Metrics), len(cfg.Flavors)*len(metrics))
			}
			for _, fl := range cfg.Flavors {
				name := "bench-" + mode + "-3srv-fsync-off/" + fl + ".writes_per_s"
				if m, ok := f.Metric(name); !ok || len(m.Samples) != cfg.Repetitions || m.Better != benchdata.Higher {
					t.Errorf("bench.json %s: %+v, %v", name, m, ok)
				}
			}
		})
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Flavors: []string{"raft"}}, `--flavor: unknown flavor "raft" (known: poled, etcd, zookeeper)`},
		{Config{Servers: []int{0}}, "--servers: 0 servers"},
		{Config{Mode: "half"}, `--mode: unknown mode "half"`},
		{Config{Mode: Open}, "--rate: the open loop needs"},
		{Config{Clients: -1}, "--clients: -1"},
	} {
		tc.c.Defaults()
		if err := tc.c.Check(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want %s...", tc.c, err, tc.want)
		}
	}
}
