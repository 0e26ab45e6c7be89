package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/zab"
)

// TestMarksPruned: a run that drops the follower marks of writes another server
// decided joins into the same anatomy (every path, every count) as one that keeps them
// all, through a kill, a restart, random faults and windows, and keeps none of them;
// chunks of 256 marks make the passes during the run happen in short runs.
func TestMarksPruned(t *testing.T) {
	cases := []struct {
		name    string
		cfg     func(t *testing.T) Config
		workers int
	}{
		{"two-dc", func(t *testing.T) Config { return config(t, "two-dc", 6*time.Second, 3*time.Second, 1) }, 1},
		{"three-dc-recovery, restarted", func(t *testing.T) Config {
			cfg := config(t, "three-dc-recovery", 8*time.Second, 3*time.Second, 2)
			cfg.Faults = append(cfg.Faults, nemesis.Fault{At: 5 * time.Second, Kind: nemesis.Restart, Server: 5})
			return cfg
		}, 1},
		{"faults, seed 3", func(t *testing.T) Config { return checkConfig(t, 3) }, 1},
		{"nine-dc, 2 workers", func(t *testing.T) Config {
			return config(t, "nine-dc", 3*time.Second, 1500*time.Millisecond, 1, spec.Setting{Name: "rate", Value: "2000"})
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var res [2]*Result
			for i, keep := range []bool{true, false} {
				cfg := c.cfg(t)
				cfg.Trace, cfg.Workers, cfg.keepMarks, cfg.markChunk = true, c.workers, keep, 256
				r, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if r.OneLoop != "" && c.workers > 1 {
					t.Fatalf("went back to one loop: %s", r.OneLoop)
				}
				res[i] = r
			}
			all, pruned := res[0], res[1]
			paths, st := analysis.Join(all.Records, all.Marks, all.MarksStart)
			ppaths, pst := analysis.Join(pruned.Records, pruned.Marks, pruned.MarksStart)
			if !reflect.DeepEqual(st, pst) || !reflect.DeepEqual(paths, ppaths) {
				t.Fatalf("the anatomy changed: %+v against %+v kept", pst, st)
			}
			decider := map[uint64]int{}
			for _, cs := range all.Marks {
				for _, c := range cs {
					for _, m := range c {
						if m.Kind == trace.Quorum {
							decider[uint64(m.Zxid)] = int(m.Peer)
						}
					}
				}
			}
			count := func(r *Result) (n, others int) {
				for id, cs := range r.Marks {
					for _, c := range cs {
						for _, m := range c {
							n++
							if by, ok := decider[uint64(m.Zxid)]; ok && by != id && follower(m.Kind) {
								others++
							}
						}
					}
				}
				return n, others
			}
			n, others := count(all)
			pn, pothers := count(pruned)
			if pothers != 0 || pn != n-others || others == 0 {
				t.Fatalf("%d marks, %d of them other followers'; pruned: %d, %d", n, others, pn, pothers)
			}
			t.Logf("%d paths; %d marks kept of %d", len(paths), pn, n)
		})
	}
}

// TestDeciderTable answers as the map it replaced: by epoch and counter, counters
// seen out of order, a Peer of 0 known, what was never set unknown.
func TestDeciderTable(t *testing.T) {
	z := func(epoch, counter uint64) zab.Zxid { return zab.Zxid(epoch<<32 | counter) }
	var tab deciderTable
	set := map[zab.Zxid]uint8{z(1, 5): 3, z(1, 7): 4, z(1, 2): 0, z(2, 1): 2, z(1, 6): 5}
	for _, k := range []zab.Zxid{z(1, 5), z(1, 7), z(1, 2), z(2, 1), z(1, 6)} {
		tab.set(k, set[k])
	}
	for _, tc := range []struct {
		z    zab.Zxid
		want int
		ok   bool
	}{
		{z(1, 5), 3, true}, {z(1, 7), 4, true}, {z(1, 2), 0, true}, {z(1, 6), 5, true}, {z(2, 1), 2, true},
		{z(1, 3), 0, false}, {z(1, 1), 0, false}, {z(1, 8), 0, false}, {z(2, 2), 0, false}, {z(3, 1), 0, false},
	} {
		if by, ok := tab.get(tc.z); by != tc.want || ok != tc.ok {
			t.Errorf("%v: %d %v, want %d %v", tc.z, by, ok, tc.want, tc.ok)
		}
	}
}
