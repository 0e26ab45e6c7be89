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
