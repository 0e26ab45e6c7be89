package pole

import (
	"container/heap"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/zxid"
)

// sim is a deterministic in-memory network for tests: a virtual clock, per-pair one-way
// delays with jitter, loss, crashes, late starts and per-link FIFO order (as TCP gives
// poled), all driven by one seeded source. It also plays the broadcast layer's failure
// detector (fd): the paper's leader-follower connections, read from the nodes' state.
type sim struct {
	t      testing.TB
	rng    *rand.Rand
	now    time.Duration
	tick   time.Duration
	ids    []int
	cfg    func(id int) Config
	nodes  map[int]*Node
	up     map[int]bool
	phase  map[int]time.Duration
	delay  func(from, to int) time.Duration // one-way base delay
	jitter float64                          // sd of the delay, as a fraction of it
	loss   float64
	last   map[[2]int]time.Duration // per-link FIFO: last delivery time
	q      evQueue
	seq    int
	zxid   map[int]zxid.Zxid
	rate   map[int]float64

	// fdTicks > 0 turns on the failure detector. A follower whose leader crashed or
	// does not lead calls NewElection after fdTicks ticks (a dropped connection: every
	// follower notices at about the same time). A leader without a quorum of followers
	// gives up after a random [fdTicks, 2*fdTicks) ticks, or after exactly fdTicks if
	// fixedFD (as poled's broadcast layer does). With a fixed timeout and line 65 read
	// literally (a vote for any leader counts toward the election timer), two
	// minorities can elect themselves in turn forever, each with the other's votes
	// while the other leads alone (sim's TestCheckConverges has such schedules); onVote
	// counts only votes for its own proposal instead.
	fdTicks  int
	fixedFD  bool
	bad      map[int]int
	badLimit map[int]int

	leaderEvents map[int][]Event // every EventLeader, per node
	elections    int             // NewElection calls made by the fd
}

type simEv struct {
	at   time.Duration
	seq  int
	tick int    // node to tick, or 0
	act  func() // an action of the test, or nil
	msg  Message
}

type evQueue []simEv

func (q evQueue) Len() int { return len(q) }
func (q evQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q evQueue) Swap(i, j int)    { q[i], q[j] = q[j], q[i] }
func (q *evQueue) Push(x any)      { *q = append(*q, x.(simEv)) }
func (q *evQueue) Pop() any        { o := *q; x := o[len(o)-1]; *q = o[:len(o)-1]; return x }
func (s *sim) push(e simEv)        { s.seq++; e.seq = s.seq; heap.Push(&s.q, e) }
func (s *sim) leaderOf(id int) int { _, l := s.nodes[id].Leader(); return l }

func newSim(t testing.TB, seed int64, ids []int, cfg func(id int) Config) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewSource(seed)), tick: 10 * time.Millisecond, ids: ids, cfg: cfg,
		nodes: map[int]*Node{}, up: map[int]bool{}, phase: map[int]time.Duration{},
		last: map[[2]int]time.Duration{}, zxid: map[int]zxid.Zxid{}, rate: map[int]float64{},
		bad: map[int]int{}, badLimit: map[int]int{}, leaderEvents: map[int][]Event{},
		delay: func(int, int) time.Duration { return time.Millisecond }}
	for _, id := range ids {
		s.phase[id] = time.Duration(s.rng.Int63n(int64(s.tick)))
	}
	return s
}

// topoDelay makes links from a topology: one-way delay RTT/2.
func topoDelay(tp *topology.Topology) func(a, b int) time.Duration {
	return func(a, b int) time.Duration {
		return time.Duration(tp.RTT(a, b) / 2 * float64(time.Millisecond))
	}
}

// start boots id (fresh state, as after a restart) at the current time and lets the
// driver call NewElection, as poled does at startup.
func (s *sim) start(id int) {
	n, err := NewNode(s.cfg(id))
	if err != nil {
		s.t.Fatalf("NewNode(%d): %v", id, err)
	}
	n.SetZxid(s.zxid[id])
	n.SetRate(s.rate[id])
	s.nodes[id], s.up[id], s.bad[id] = n, true, 0
	n.NewElection()
	s.flush(id)
	s.push(simEv{at: s.now + s.phase[id] + 1, tick: id})
}

func (s *sim) crash(id int) { s.up[id] = false }

// at schedules a test action at time t.
func (s *sim) at(t time.Duration, f func()) { s.push(simEv{at: t, act: f}) }

func (s *sim) setRate(id int, r float64) {
	s.rate[id] = r
	if n := s.nodes[id]; n != nil {
		n.SetRate(r)
	}
}

func (s *sim) live() []int {
	var out []int
	for _, id := range s.ids {
		if s.up[id] {
			out = append(out, id)
		}
	}
	return out
}

// flush sends what the node produced.
func (s *sim) flush(id int) {
	rd := s.nodes[id].Ready()
	for _, e := range rd.Events {
		if e.Kind == EventLeader {
			s.leaderEvents[id] = append(s.leaderEvents[id], e)
		}
	}
	for _, m := range rd.Messages {
		if m.From != id {
			s.t.Fatalf("node %d sent a message from %d", id, m.From)
		}
		if s.loss > 0 && s.rng.Float64() < s.loss {
			continue
		}
		d := s.delay(m.From, m.To)
		if s.jitter > 0 {
			d += time.Duration(float64(d) * s.jitter * s.rng.NormFloat64())
		}
		at := s.now + max(d, 0)
		link := [2]int{m.From, m.To}
		at = max(at, s.last[link])
		s.last[link] = at
		s.push(simEv{at: at, msg: m})
	}
}

// run processes events up to and including until.
func (s *sim) run(until time.Duration) {
	for len(s.q) > 0 && s.q[0].at <= until {
		e := heap.Pop(&s.q).(simEv)
		s.now = e.at
		if e.act != nil {
			e.act()
			continue
		}
		if e.tick != 0 {
			id := e.tick
			if !s.up[id] {
				continue // a crashed node's tick chain ends; start begins a new one
			}
			s.nodes[id].Tick(s.now)
			s.detect(id)
			s.flush(id)
			s.push(simEv{at: s.now + s.tick, tick: id})
			continue
		}
		to := e.msg.To
		if !s.up[to] || !s.up[e.msg.From] {
			continue
		}
		if err := s.nodes[to].Step(s.now, e.msg); err != nil {
			s.t.Fatalf("t=%v node %d: %v", s.now, to, err)
		}
		s.flush(to)
	}
	s.now = until
}

// detect is the failure detector of the broadcast layer (Sec. 3.1): a follower needs a
// live leader that leads; a leader needs a quorum of live processes following it.
func (s *sim) detect(id int) {
	if s.fdTicks == 0 {
		return
	}
	l := s.leaderOf(id)
	ok, limit := true, s.fdTicks
	switch {
	case l == 0:
	case l == id:
		followers := 0
		for _, j := range s.ids {
			if s.up[j] && s.leaderOf(j) == id {
				followers++
			}
		}
		ok = followers >= score.Quorum(len(s.ids))
		if !ok && s.bad[id] == 0 {
			s.badLimit[id] = s.fdTicks
			if !s.fixedFD {
				s.badLimit[id] += s.rng.Intn(s.fdTicks)
			}
		}
		limit = s.badLimit[id]
	default:
		ok = s.up[l] && s.leaderOf(l) == l
	}
	if ok {
		s.bad[id] = 0
		return
	}
	if s.bad[id]++; s.bad[id] >= limit {
		s.bad[id] = 0
		s.elections++
		s.nodes[id].NewElection()
	}
}

// agreed returns the leader every live node believes in, or 0 and false.
func (s *sim) agreed() (int, bool) {
	leader := -1
	for _, id := range s.live() {
		l := s.leaderOf(id)
		if l == 0 || leader != -1 && l != leader {
			return 0, false
		}
		leader = l
	}
	return leader, leader > 0
}

// sameEpochConflict reports two live nodes that believe in different leaders of one epoch.
func (s *sim) sameEpochConflict() (a, b int, found bool) {
	live := s.live()
	for i, x := range live {
		ex, lx := s.nodes[x].Leader()
		for _, y := range live[i+1:] {
			ey, ly := s.nodes[y].Leader()
			if lx != 0 && ly != 0 && ex == ey && lx != ly {
				return x, y, true
			}
		}
	}
	return 0, 0, false
}

func (s *sim) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%v", s.now)
	for _, id := range s.ids {
		if s.up[id] {
			fmt.Fprintf(&b, "\n  %v", s.nodes[id].Status())
		} else {
			fmt.Fprintf(&b, "\n  %d: down", id)
		}
	}
	return b.String()
}
