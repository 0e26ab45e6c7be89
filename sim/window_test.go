package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/spec"
)

// TestWorkers: a run stepped in windows by 2 or 3 workers is the run one loop steps,
// in every output (records, timeline, trace marks, read-back, state digests, events
// processed), without going back to one loop, for the paper's two- and three-DC
// layouts, through a kill, a restart and the recovery that follows, and on a ring
// whose links are all alike.
func TestWorkers(t *testing.T) {
	paper := func(name string, more ...nemesis.Fault) func(t *testing.T) Config {
		return func(t *testing.T) Config {
			cfg := config(t, name, 8*time.Second, 3*time.Second, 2)
			cfg.Faults = append(cfg.Faults, more...)
			return cfg
		}
	}
	cases := []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"two-dc", paper("two-dc")},
		{"three-dc-dep1", paper("three-dc-dep1")},
		{"three-dc-recovery, restarted", paper("three-dc-recovery", nemesis.Fault{At: 5 * time.Second, Kind: nemesis.Restart, Server: 5})},
		// nine-dc's 45 servers on a ring of 9 DCs, links alike: messages of two DCs
		// reach a third at one instant, and a link is sent on at the instant it is emptied.
		{"nine-dc", func(t *testing.T) Config {
			return config(t, "nine-dc", 3*time.Second, 1500*time.Millisecond, 1, spec.Setting{Name: "rate", Value: "2000"})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, workers := range []int{2, 3} {
				if why := sameAtWorkers(t, c.cfg(t), workers); why != "" {
					t.Fatalf("%d workers went back to one loop: %s", workers, why)
				}
			}
		})
	}
}

// TestWorkersUnderFaults: `sim check`'s random fault schedules (kills, restarts,
// pauses, partitions, one-way links, slow disks) give the same run at 2 workers as on
// one loop, whether the windows carry it through or it goes back to one loop (a reset
// of the broadcast streams reaches every partition at once).
func TestWorkersUnderFaults(t *testing.T) {
	windowed := 0
	for seed := uint64(1); seed <= 12; seed++ {
		why := sameAtWorkers(t, checkConfig(t, seed), 2)
		if why == "" {
			windowed++
		} else {
			t.Logf("seed %d: one loop: %s", seed, why)
		}
	}
	if windowed == 0 {
		t.Fatal("no fault schedule ran in windows")
	}
	t.Logf("%d of 12 fault schedules ran in windows", windowed)
}

// sameAtWorkers runs cfg on one loop and at workers, fails t unless every output is
// the same, and says why the windowed run went back to one loop ("" if it did not).
func sameAtWorkers(t *testing.T, cfg Config, workers int) string {
	t.Helper()
	var res [2]*Result
	for i, w := range []int{1, workers} {
		cfg.Trace, cfg.digests, cfg.Workers = true, true, w
		r, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		res[i] = r
	}
	one, win := res[0], res[1]
	if one.Windows != 0 {
		t.Fatalf("one worker ran %d windows", one.Windows)
	}
	if win.OneLoop == "" && win.Windows == 0 {
		t.Fatalf("%d workers ran no window", workers)
	}
	t.Logf("%d workers: %d events in %d windows", workers, win.Events, win.Windows)
	why := win.OneLoop
	win.Windows, win.OneLoop = 0, ""
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"records", win.Records, one.Records},
		{"timeline", win.Timeline, one.Timeline},
		{"marks", win.Marks, one.Marks},
		{"verification", win.Verification, one.Verification},
		{"digests", win.Digests, one.Digests},
		{"rtts", win.RTTs, one.RTTs},
		{"events", win.Events, one.Events},
		{"result", *win, *one},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Fatalf("%d workers: the %s differ from one loop's", workers, f.name)
		}
	}
	return why
}
