package sim

import (
	"context"
	"testing"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/score"
)

// TestRestartWithinElectedEpoch: three-dc-dep3 with the history oracle, p5 (the first
// leader: every zxid is 0, the highest id wins) killed during the load and restarted,
// with a zxid tied with the survivors', while they end the election of epoch 3. p1
// (caltech, a WAN hop from p5's slac) gets p5's first proposal (epoch 1) just before its
// election timer elects p4 and answers it with its own proposal for epoch 3 (Alg. 1
// line 38); p5's proposal for epoch 3, sent once p4 answered over the LAN, reaches a p1
// that follows p4 and gets a vote (line 35). p2 and p3 have elected p4 too: a quorum
// follows p4 in epoch 3 (p4 itself adopted p5's better proposal before its timer ran
// out).
//
// p5 must not elect itself in epoch 3 on p1's proposal: p1 left the election with its
// vote. Before pole.Node.onVote took a voter out of the proposal set, p5's election
// timer ran on with the quorum {p5, p4, p1} and p5 led epoch 3 with only p4 behind it
// until its broadcast layer gave up (docs/crash.md, "found on the way").
func TestRestartWithinElectedEpoch(t *testing.T) {
	const seed = 1
	base := func(faults ...nemesis.Fault) Config {
		cfg := config(t, "three-dc-dep3", 3*time.Second, time.Second, seed)
		cfg.Oracle, cfg.InitialLeader = score.Oracle{Name: score.History}, 0
		cfg.Faults = append([]nemesis.Fault{{At: time.Second, Kind: nemesis.Kill, Server: 5}}, faults...)
		return cfg
	}
	electedP4 := func(res *Result, id int) (time.Duration, bool) {
		for _, r := range res.Timeline {
			if r.Server == id && r.Kind == event.Elected && r.ElectionEpoch == 3 && r.Leader == 4 && r.At() > time.Second {
				return r.At(), true
			}
		}
		return 0, false
	}

	// A first run finds when p1's election timer elects p4.
	res, err := Run(context.Background(), base())
	if err != nil {
		t.Fatal(err)
	}
	t1, ok := electedP4(res, 1)
	if !ok {
		t.Fatal("without the restart, p1 did not elect p4 in epoch 3")
	}
	// p5's proposal for epoch 1 must reach p1's loop before t1, and its proposal for
	// epoch 3, a LAN round trip with its hops later, after it: the restart goes about
	// halfway between, so that jitter on the WAN link does not move either across t1.
	cfg := base()
	l, _ := cfg.Plan.Link(5, 1)
	restart := t1 - l.Delay - DefaultHopDelay - 150*time.Microsecond
	t.Logf("p1 elects p4 at %v into the load; p5 restarts at %v", t1, restart)

	cfg = base(nemesis.Fault{At: restart, Kind: nemesis.Restart, Server: 5})
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Verification.Err(); err != nil {
		t.Fatal(err)
	}
	quorumAt := time.Duration(0)
	for _, id := range []int{1, 2, 3} {
		at, ok := electedP4(res, id)
		if !ok {
			t.Fatalf("p%d did not elect p4 in epoch 3: the race this test stages did not happen", id)
		}
		quorumAt = max(quorumAt, at)
	}
	if at, _ := electedP4(res, 1); at != t1 {
		t.Fatalf("p1 elected p4 at %v, not at %v as without the restart", at, t1)
	}
	for _, r := range res.Timeline {
		if r.Server == 5 && r.Kind == event.Elected && r.At() > restart {
			t.Logf("p5 elects p%d in epoch %d at %v", r.Leader, r.ElectionEpoch, r.At())
			if r.ElectionEpoch == 3 && r.Leader == 5 {
				t.Errorf("p5 elected itself in epoch 3 at %v, after p1, p2 and p3 had elected p4 in it (by %v)", r.At(), quorumAt)
			}
		}
	}
	if !res.Converged {
		t.Error("the servers did not converge after the run")
	}
}
