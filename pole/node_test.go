package pole

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/score"
)

func TestConfigValidation(t *testing.T) {
	ok := DefaultConfig(1, servers(3), History{}, 10*time.Millisecond)
	if ok.ElectionTicks != 20 || ok.HeartbeatTicks != 100 || ok.MaxRetryTicks != 6000 {
		t.Fatalf("DefaultConfig at 10 ms ticks: %+v", ok)
	}
	if _, err := NewNode(ok); err != nil {
		t.Fatal(err)
	}
	for want, mut := range map[string]func(c *Config){
		"no servers":          func(c *Config) { c.Servers = nil },
		"ids start at 1":      func(c *Config) { c.Servers = []int{0, 1} },
		"listed twice":        func(c *Config) { c.Servers = []int{1, 2, 2} },
		"not among":           func(c *Config) { c.ID = 9 },
		"no oracle":           func(c *Config) { c.Oracle = nil },
		"ElectionTicks":       func(c *Config) { c.ElectionTicks = 0 },
		"negative tick count": func(c *Config) { c.RetryTicks = -1 },
		"MissedHeartbeats":    func(c *Config) { c.MissedHeartbeats = 0 },
		"RTTWindow":           func(c *Config) { c.RTTWindow = 0 },
		"ResignMargin":        func(c *Config) { c.ResignMargin = math.NaN() },
	} {
		c := ok
		mut(&c)
		if _, err := NewNode(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestStepRejectsBadMessages(t *testing.T) {
	n, err := NewNode(DefaultConfig(1, servers(3), History{}, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for want, m := range map[string]Message{
		"message for 2":                 {Type: MsgPing, From: 3, To: 2},
		"from unknown server 7":         {Type: MsgPing, From: 7, To: 1},
		"from unknown server 1":         {Type: MsgPing, From: 1, To: 1},
		"vote for unknown server 9":     {Type: MsgVote, From: 2, To: 1, Leader: 9},
		"proposal of unknown server 0":  {Type: MsgPropose, From: 2, To: 1},
		"NaN":                           {Type: MsgPropose, From: 2, To: 1, Proposal: Proposal{ID: 2, Score: Score{math.NaN()}}},
		"unknown message type MsgType(": {Type: 42, From: 2, To: 1},
	} {
		if err := n.Step(0, m); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: got %v, want an error containing %q", m, err, want)
		}
	}
	if n.HasReady() {
		t.Errorf("rejected messages produced output: %+v", n.Ready())
	}
}

// After a crash, get-score leaves the lost leader out even while the monitor still
// counts it alive (Sec. 3.3): the score is the one for a cluster without it.
func TestNewElectionScoresWithoutTheLostLeader(t *testing.T) {
	c := DefaultConfig(1, servers(5), Consensus{}, 10*time.Millisecond)
	c.HeartbeatTicks = 10
	n, err := NewNode(c)
	if err != nil {
		t.Fatal(err)
	}
	// p1 measures 10, 20, 30, 40 ms to p2..p5.
	n.Tick(0)
	for p := 2; p <= 5; p++ {
		rtt := time.Duration(10*(p-1)) * time.Millisecond
		if err := n.Step(rtt, Message{Type: MsgPong, From: p, To: 1, Clock: 0}); err != nil {
			t.Fatal(err)
		}
	}
	// p2 leads; the votes of a quorum including p2's own make p1 adopt it.
	n.NewElection()
	for _, v := range []int{2, 3, 4} {
		if err := n.Step(50*time.Millisecond, Message{Type: MsgVote, From: v, To: 1, Epoch: 1, Leader: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, l := n.Leader(); l != 2 {
		t.Fatalf("leader %d, want 2: %v", l, n.Status())
	}
	if s := n.Status().Proposal.Score; s[0] != 20 {
		t.Fatalf("first election's theta_c %v, want 20 ms (3rd of 0,10,20,30,40)", s)
	}
	n.NewElection() // p2 is lost
	want, _ := score.ThetaC([]float64{20, 30, 40}, 5)
	if s := n.Status().Proposal.Score; s[0] != want {
		t.Fatalf("theta_c without p2: %v, want %v", s, want)
	}
	if !n.mon.alive(2) {
		t.Fatal("the test means p2 to be alive for the monitor")
	}
}

// A node blocked in get-score keeps at most queueLimit messages, the newest.
func TestBlockedQueueIsBounded(t *testing.T) {
	c := DefaultConfig(1, servers(3), Latency{}, 10*time.Millisecond)
	n, _ := NewNode(c)
	n.NewElection()
	if !n.Status().Blocked {
		t.Fatal("latency oracle without measurements should block")
	}
	for i := range queueLimit + 10 {
		if err := n.Step(0, Message{Type: MsgPropose, From: 2, To: 1, Epoch: Epoch(i + 1), Proposal: Proposal{ID: 2, Score: Score{1}}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(n.queue) != queueLimit || n.queue[0].Epoch != 11 {
		t.Fatalf("queue of %d starting at epoch %d, want %d starting at 11", len(n.queue), n.queue[0].Epoch, queueLimit)
	}
}

// Resignation on the simulated network: Dep. 1 with every request in D3 (p = 1). The
// initial leader p5 is far from the load; with resignation on, it hands over to p1,
// which then stays.
func TestResignationHandsOverToTheBetterServer(t *testing.T) {
	tp := loadTopology(t, "three-dc-dep1", "1")
	ids := tp.Servers()
	s := newSim(t, 1, ids, func(id int) Config {
		c := DefaultConfig(id, ids, Initial{Leader: 5, Oracle: Latency{}}, tick)
		c.ResignCheckTicks, c.ResignMargin = 200, 5 // every 2 s, 5 ms
		return c
	})
	s.delay, s.jitter, s.fdTicks = topoDelay(tp), 0.02, 150
	for id, r := range tp.ServerRates(ids) {
		s.rate[id] = r
	}
	for _, id := range ids {
		s.start(id)
	}
	s.run(time.Second)
	if l, ok := s.agreed(); !ok || l != 5 {
		t.Fatalf("p5 should lead first: %s", s.describe())
	}
	s.run(20 * time.Second)
	if l, ok := s.agreed(); !ok || l != 1 {
		t.Fatalf("p5 should have resigned for p1: %s", s.describe())
	}
	for _, id := range ids {
		if evs := s.leaderEvents[id]; len(evs) != 2 || evs[0].Leader != 5 || evs[1].Leader != 1 {
			t.Errorf("p%d's leaders %v, want p5 then p1 only", id, evs)
		}
	}
}
