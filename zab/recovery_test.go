package zab

import (
	"errors"
	"slices"
	"testing"
)

const ms = 1000 // µs

func (s *sim) count(t MsgType, from, to int) int { return s.sentTo[[3]int{int(t), from, to}] }

func TestLeaderKilledMidBroadcast(t *testing.T) {
	for _, tc := range []struct {
		name   string
		diskUS int64
		delay  func(a, b int) int64
	}{
		{"lan", 0, func(a, b int) int64 { return 100 }},
		{"disk-latency", 1 * ms, func(a, b int) int64 { return 200 }},
		{"wan-2dc", 500, twoDC(10 * ms)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultSimConfig()
			cfg.diskUS, cfg.delayUS = tc.diskUS, tc.delay
			s := newSim(t, 7, cfg)
			s.runUntil(500 * ms)
			l := s.leaderServing()
			if l == nil || l.id != 5 {
				t.Fatalf("initial leader %v, want p5", l)
			}
			inFlight := len(s.reqs)
			ackedBefore := len(s.acked)
			s.crash(5)
			s.runFor(700 * ms)
			nl := s.leaderServing()
			if nl == nil || nl.id != 4 {
				t.Fatalf("new leader %v, want p4 (history)", nl)
			}
			if len(s.acked) <= ackedBefore {
				t.Fatalf("no write acknowledged after the crash")
			}
			s.restart(5)
			s.converge(2000 * ms)
			s.checkFinal()
			if inFlight == 0 {
				t.Fatalf("no write was in flight at the crash: the test proves nothing")
			}
			t.Logf("in flight at crash %d, acked %d, unknown %d", inFlight, len(s.acked), s.unknown)
		})
	}
}

// twoDC puts p1, p2 in one data center and p3..p5 in another (Fig. 4a).
func twoDC(oneWay int64) func(a, b int) int64 {
	return func(a, b int) int64 {
		if (a <= 2) == (b <= 2) {
			return 50
		}
		return oneWay
	}
}

func TestFollowerSyncDiffOrSnap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		downFor  int64
		wantSnap bool
	}{
		{"short-gap-diff", 20 * ms, false}, // about 20 writes, window 50
		{"long-gap-snap", 400 * ms, true},  // about 400 writes
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 3, defaultSimConfig())
			s.runUntil(300 * ms)
			s.crash(3)
			s.runFor(tc.downFor)
			snaps, diffs := s.count(MsgSnap, 5, 3), s.count(MsgDiff, 5, 3)
			lastBefore := s.nodes[3].core.Status().LastZxid
			s.restart(3)
			s.runFor(300 * ms)
			s.converge(1000 * ms)
			s.checkFinal()
			gotSnap := s.count(MsgSnap, 5, 3) - snaps
			gotDiff := s.count(MsgDiff, 5, 3) - diffs
			if tc.wantSnap && gotSnap != 1 || !tc.wantSnap && (gotSnap != 0 || gotDiff == 0) {
				t.Fatalf("p3 got %d SNAP and %d DIFF messages; want snap=%v", gotSnap, gotDiff, tc.wantSnap)
			}
			if s.count(MsgTrunc, 5, 3) != 0 {
				t.Fatalf("p3 was truncated but had only committed transactions")
			}
			t.Logf("p3 was at %v, leader at %v: %d SNAP, %d DIFF", lastBefore, s.nodes[5].core.Status().LastZxid, gotSnap, gotDiff)
		})
	}
}

// A former leader's proposals that no one else logged are truncated when it rejoins.
func TestFormerLeaderTruncated(t *testing.T) {
	cfg := defaultSimConfig()
	partitionAt := int64(300 * ms)
	var s *sim
	cfg.policy = func(s *sim) int {
		if s.now < partitionAt {
			return 5
		}
		return fixedPolicy(4, 3, 2, 1)(s)
	}
	s = newSim(t, 5, cfg)
	s.runUntil(partitionAt)
	s.quiet = true
	s.runFor(50 * ms) // let the in-flight writes settle
	for i := 1; i <= 4; i++ {
		s.partition(5, i, true)
	}
	before := s.nodes[5].core.Status().LastZxid
	var orphans []uint64
	for range 10 {
		if !s.clientWrite(5) {
			t.Fatal("p5 not serving right after the partition")
		}
		orphans = append(orphans, s.nextReq)
	}
	s.runFor(100 * ms)
	orphanLast := s.nodes[5].core.Status().LastZxid
	if orphanLast <= before || s.nodes[5].sm.zxid != before {
		t.Fatalf("p5 should have logged but not applied its proposals: last %v, applied %v, before %v", orphanLast, s.nodes[5].sm.zxid, before)
	}
	s.runFor(500 * ms) // p1..p4 elect p4
	if l := s.leaderServing(); l == nil || l.id != 4 {
		t.Fatalf("leader %v, want p4", l)
	}
	for i := 1; i <= 4; i++ {
		s.partition(5, i, false)
	}
	s.quiet = false
	s.runFor(500 * ms)
	s.converge(2000 * ms)
	s.checkFinal()
	if s.count(MsgTrunc, 4, 5) == 0 {
		t.Fatalf("p5 was never sent TRUNC")
	}
	for z := before + 1; z <= orphanLast; z++ {
		if _, ok := s.canonIdx[z]; ok {
			t.Fatalf("uncommitted %v of the old leader was applied", z)
		}
	}
	for _, id := range orphans {
		if _, ok := s.acked[id]; ok {
			t.Fatalf("orphan request %d acknowledged", id)
		}
		if _, ok := s.reqs[id]; ok {
			t.Fatalf("orphan request %d never answered", id)
		}
	}
}

// fig8a runs the Fig. 8a experiment: p1 outdated (down most of the run, restarted
// just before the leader p5 dies), then the election picks `policy`. It returns
// the new leader and its recovery time (FIRST_COMMIT - LEADING) in µs.
func fig8a(t *testing.T, statePad int, policy func(*sim) int, fetch FetchPolicy) (int, int64, *sim) {
	t.Helper()
	cfg := defaultSimConfig()
	cfg.delayUS = twoDC(10 * ms)
	cfg.bandwidth = 10 << 20 // 10 MiB/s on every link
	cfg.statePad = statePad
	cfg.zab.FetchFrom = fetch
	crashAt := int64(800 * ms)
	cfg.policy = func(s *sim) int {
		if s.now < crashAt {
			return 5
		}
		return policy(s)
	}
	s := newSim(t, 11, cfg)
	s.runUntil(100 * ms)
	s.crash(1)
	s.runUntil(crashAt - 10*ms)
	s.restart(1)
	s.runUntil(crashAt)
	s.crash(5)
	s.runFor(1000 * ms)
	l := s.leaderServing()
	if l == nil {
		t.Fatalf("no leader serving after the crash")
	}
	lead, ok1 := s.lastEvent(l.id, EventLeading, crashAt)
	first, ok2 := s.lastEvent(l.id, EventFirstCommit, crashAt)
	if !ok1 || !ok2 || first < lead {
		t.Fatalf("p%d: LEADING %v at %d, FIRST_COMMIT %v at %d", l.id, ok1, lead, ok2, first)
	}
	s.restart(5)
	s.converge(2000 * ms)
	s.checkFinal()
	return l.id, first - lead, s
}

func TestBehindLeaderLearnsBeforeServing(t *testing.T) {
	sizes := []int{0, 1 << 20, 2 << 20, 4 << 20}
	var rotating, history []int64
	for _, size := range sizes {
		id, rec, s := fig8a(t, size, rotatingPolicy, FetchFirst)
		if id != 1 {
			t.Fatalf("rotating elected p%d, want p1", id)
		}
		// p1 learned the state from a quorum member before serving: a snapshot
		// and a FETCHDONE from the member with the latest history.
		src := 0
		for _, id := range []int{2, 3, 4} {
			if s.count(MsgFetchDone, id, 1) > 0 {
				src = id
			}
		}
		if src == 0 || s.count(MsgSnap, src, 1) == 0 {
			t.Fatalf("p1 did not fetch a snapshot (source p%d)", src)
		}
		rotating = append(rotating, rec)
	}
	for _, size := range []int{sizes[0], sizes[len(sizes)-1]} {
		id, rec, _ := fig8a(t, size, historyPolicy, FetchFirst)
		if id != 4 {
			t.Fatalf("history elected p%d, want p4", id)
		}
		history = append(history, rec)
	}
	t.Logf("state sizes %v: recovery rotating(p1) %v µs; history(p4) at the smallest and largest %v µs", sizes, rotating, history)
	for i := 1; i < len(sizes); i++ {
		if rotating[i] <= rotating[i-1] {
			t.Fatalf("rotating recovery does not grow with the state: %v", rotating)
		}
	}
	// The extra time is the transfer: 4 MiB at 10 MiB/s is 400 ms.
	extra := rotating[3] - rotating[0]
	if extra < 350*ms || extra > 500*ms {
		t.Fatalf("4 MiB took %d µs more than 0 MiB, want about 400 ms", extra)
	}
	// p4 has the whole history and a quorum without p1: its recovery does not depend on the state.
	if d := slices.Max(history) - slices.Min(history); d > 30*ms {
		t.Fatalf("history recovery varies by %d µs with the state size: %v", d, history)
	}
	if history[1] >= rotating[3] {
		t.Fatalf("history %d µs not faster than rotating %d µs at 4 MiB", history[1], rotating[3])
	}
}

func TestRestartFromPersistedState(t *testing.T) {
	cfg := defaultSimConfig()
	cfg.diskUS = 2 * ms // a crash loses the write in flight
	s := newSim(t, 9, cfg)
	s.runUntil(400 * ms)
	for _, id := range []int{2, 5} { // a follower, then the leader
		s.crash(id)
		nd := s.nodes[id]
		s.restart(id)
		st := nd.core.Status()
		wantLast := nd.disk.snapZxid
		if len(nd.disk.log) > 0 {
			wantLast = max(wantLast, nd.disk.log[len(nd.disk.log)-1].Zxid)
		}
		if st.AcceptedEpoch != nd.disk.hs.AcceptedEpoch || st.CurrentEpoch != nd.disk.hs.CurrentEpoch ||
			st.LastZxid != wantLast || st.Applied != nd.disk.snapZxid || nd.sm.zxid != nd.disk.snapZxid || st.Role != Looking {
			t.Fatalf("p%d restarted as %+v; disk: %+v snapshot %v log to %v", id, st, nd.disk.hs, nd.disk.snapZxid, wantLast)
		}
		s.runFor(400 * ms)
	}
	// The whole cluster at once.
	for i := 1; i <= 5; i++ {
		s.crash(i)
	}
	for i := 1; i <= 5; i++ {
		s.restart(i)
	}
	s.runFor(500 * ms)
	s.converge(2000 * ms)
	s.checkFinal()
	if len(s.acked) == 0 {
		t.Fatal("nothing acknowledged")
	}
}

func TestProposeNotServing(t *testing.T) {
	s := newSim(t, 1, defaultSimConfig())
	if err := s.nodes[1].core.Propose(1, []byte("x")); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Propose while looking: %v", err)
	}
}

// TestCommitsContinueDuringSnap: while the leader streams a follower an 8 MiB state
// over a 10 MiB/s link (about 0.8 s), the others keep committing: the core never
// waits for a SNAP, and only that follower's link is busy. Each write is acknowledged
// within a few link delays, as in the steady state before the crash.
func TestCommitsContinueDuringSnap(t *testing.T) {
	cfg := defaultSimConfig()
	cfg.bandwidth = 10 << 20
	cfg.statePad = 8 << 20
	cfg.policy = fixedPolicy(5)
	s := newSim(t, 17, cfg)
	var acks []int64 // times of successful results, anywhere
	s.onResult = func(_ *simNode, r Result) {
		if r.Err == nil {
			acks = append(acks, s.now)
		}
	}
	s.runUntil(300 * ms)
	s.crash(3)
	s.runFor(400 * ms) // about 400 writes, beyond the DIFF window: p3 needs a SNAP
	snaps := s.count(MsgSnap, 5, 3)
	restart := s.now
	s.restart(3)
	s.runFor(2000 * ms)
	if s.count(MsgSnap, 5, 3) != snaps+1 {
		t.Fatalf("p3 got %d SNAPs after its restart; want 1", s.count(MsgSnap, 5, 3)-snaps)
	}
	synced, ok := s.lastEvent(3, EventSynced, restart)
	if !ok || synced-restart < 700*ms {
		t.Fatalf("p3 SYNCED %v, %d µs after its restart; want the 8 MiB transfer to take >= 700 ms", ok, synced-restart)
	}
	gap := func(from, to int64) (n int, worst int64) {
		last := from
		for _, a := range acks {
			if a >= from && a <= to {
				n, worst, last = n+1, max(worst, a-last), a
			}
		}
		return n, max(worst, to-last)
	}
	nBefore, gapBefore := gap(100*ms, 300*ms)
	nDuring, gapDuring := gap(restart+50*ms, synced)
	perMS := func(n int, d int64) float64 { return float64(n) / float64(d/ms) }
	t.Logf("acknowledged: before %.2f/ms, longest gap %d µs; during p3's %d ms SNAP %.2f/ms, longest gap %d µs",
		perMS(nBefore, 200*ms), gapBefore, (synced-restart)/ms, perMS(nDuring, synced-restart-50*ms), gapDuring)
	if perMS(nDuring, synced-restart-50*ms) < 0.9*perMS(nBefore, 200*ms) {
		t.Errorf("commits slowed during the SNAP: %d in %d ms", nDuring, (synced-restart-50*ms)/ms)
	}
	if gapDuring > gapBefore+2*ms {
		t.Errorf("the longest wait between acknowledgements grew from %d µs to %d µs during the SNAP", gapBefore, gapDuring)
	}
	s.converge(2000 * ms)
	s.checkFinal()
}
