package sim

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/trace"
)

// TestKillRightAfterProposal: the two-DC run's leader p5 is killed at the very
// nanosecond its PROPOSALs of one write leave (after its loop sent them: a kill lands
// between two Readies, as on the local backend). The proposal is then on every link:
// 0.05 ms from the leader's LAN neighbours p3 and p4, 10.4 ms from p1 and p2. Every
// follower must get it, the neighbours first, and the neighbours enter the election
// with a zxid no lower than the far followers' (docs/crash.md: on the local backend p4
// once entered it a transaction behind p1-p3, and history elected p3). These are the crash
// semantics the real backends share (transport.Die, replica.Node.Stop): what departed
// before the death reaches every peer, and the peers hear of the death after it.
func TestKillRightAfterProposal(t *testing.T) {
	const seed = 1
	// A first run finds the instant one of p5's proposals leaves, 2 s into the load.
	cfg := config(t, "two-dc", 4*time.Second, 3*time.Second, seed)
	cfg.Trace = true
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var prop trace.Mark
	for _, m := range slices.Concat(res.Marks[5]...) {
		if m.Kind == trace.Proposed && m.At >= res.MarksStart+int64(2*time.Second) {
			prop = m
			break
		}
	}
	if prop.Zxid == 0 {
		t.Fatal("p5 proposed nothing 2 s into the load")
	}
	kill := prop.At // virtual ns since the servers started
	t.Logf("p5 proposes %v at %d ns of virtual time (%v into the load): it is killed then",
		prop.Zxid, kill, time.Duration(kill-res.MarksStart))

	// The same run (same seed: the same history up to the kill), p5 killed then.
	cfg = config(t, "two-dc", 4*time.Second, time.Duration(kill-res.MarksStart), seed)
	cfg.Trace = true
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Verification.Err(); err != nil {
		t.Fatal(err)
	}
	same := false
	for _, m := range slices.Concat(res.Marks[5]...) {
		if m.Kind == trace.Proposed && m.Zxid == prop.Zxid && m.At == prop.At {
			same = true
		}
	}
	if !same {
		t.Fatalf("the second run did not propose %v at %d ns as the first did", prop.Zxid, prop.At)
	}
	var killedAt int64 = -1
	for _, r := range res.Timeline {
		if r.Kind == event.Kill && r.Server == 5 && r.Fault == nemesis.Crash {
			killedAt = res.MarksStart + int64(math.Round(r.AtMS*1e6)) // AtMS counts from the load's start
		}
	}
	if killedAt != kill {
		t.Fatalf("p5 killed at %d ns, want %d (its proposal of %v)", killedAt, kill, prop.Zxid)
	}

	// When each follower got the proposal, and the zxid it entered the election with.
	arrived := map[int]int64{}
	for id := 1; id <= 4; id++ {
		for _, m := range slices.Concat(res.Marks[id]...) {
			if m.Kind == trace.PropArrived && m.Zxid == prop.Zxid {
				arrived[id] = m.At
			}
		}
	}
	elected := map[int]event.Event{}
	for _, r := range res.Timeline {
		if r.Source == record.SourceNode && r.Kind == event.Election && r.Server != 5 && r.TimeNS-base.UnixNano() > kill {
			if _, ok := elected[r.Server]; !ok {
				elected[r.Server] = r.Event
			}
		}
	}
	for id := 1; id <= 4; id++ {
		at, ok := arrived[id]
		e, voted := elected[id]
		if !ok || !voted {
			t.Fatalf("p%d: proposal of %v arrived %v, election entered %v", id, prop.Zxid, ok, voted)
		}
		t.Logf("p%d: proposal %v arrived %.3f ms after the kill; entered the election %.3f ms after it with %v",
			id, prop.Zxid, float64(at-kill)/1e6, float64(e.TimeNS-base.UnixNano()-kill)/1e6, e.Zxid)
		if at <= kill {
			t.Errorf("p%d got the proposal before the kill: it was not in flight", id)
		}
		if e.TimeNS-base.UnixNano() < at {
			t.Errorf("p%d entered the election before the proposal arrived", id)
		}
		if e.Zxid < prop.Zxid {
			t.Errorf("p%d entered the election at %v, without the dead leader's last proposal %v", id, e.Zxid, prop.Zxid)
		}
	}
	for _, near := range []int{3, 4} {
		for _, far := range []int{1, 2} {
			if arrived[near] >= arrived[far] {
				t.Errorf("p%d (0.05 ms away) got the proposal at %d ns, not before p%d (10.4 ms away) at %d", near, arrived[near], far, arrived[far])
			}
			if elected[near].Zxid < elected[far].Zxid {
				t.Errorf("p%d entered the election at %v, behind p%d's %v", near, elected[near].Zxid, far, elected[far].Zxid)
			}
		}
	}
}
