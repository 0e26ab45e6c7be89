package sim

import (
	"context"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
)

// TestTraceStepsInCausalOrder: in virtual time, where a mark's instant is exact, every
// acknowledged write's steps come in causal order across the servers it passed: the
// serving server, the leader, and the follower whose ACK completed the quorum (its ACK
// left before the leader had it). poled's trace shares this code (replica's tracer); its
// own test on real sockets can only order what the host's clock orders.
func TestTraceStepsInCausalOrder(t *testing.T) {
	for _, name := range []string{"two-dc", "three-dc-dep1"} {
		t.Run(name, func(t *testing.T) {
			cfg := config(t, name, 6*time.Second, 3*time.Second, 1)
			cfg.Trace = true
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			paths, st := analysis.Join(res.Records, res.Marks, res.MarksStart)
			if st.Joined == 0 || st.Joined < st.OK*9/10 {
				t.Fatalf("joined %d of %d acknowledged writes (missing %v)", st.Joined, st.OK, st.Missing)
			}
			for _, p := range paths {
				if p.Follower == 0 {
					t.Fatalf("write %d (%s, p%d): no follower named as completing its quorum", p.ID, p.DC, p.Server)
				}
				for s := analysis.StepRecv + 1; s <= analysis.StepReply; s++ {
					if p.At[s] < p.At[s-1] {
						t.Fatalf("write %d (%s, p%d, leader p%d, follower p%d): %v at %v before %v at %v",
							p.ID, p.DC, p.Server, p.Leader, p.Follower, s, p.At[s], s-1, p.At[s-1])
					}
				}
			}
			t.Logf("%d writes in causal order", len(paths))
		})
	}
}
