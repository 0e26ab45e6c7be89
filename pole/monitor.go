package pole

import (
	"time"
)

// monitor is the oracles' data source (Sec. 3.3): ping-pong heartbeats to every peer on
// the election channel, a mean RTT per peer, liveness, and each peer's request rate.
// It is pure like the node: the driver's clock comes in with each Step and Tick, a ping
// carries the sender's clock value and the pong echoes it, so an RTT is "now minus the
// echo" on the sender's own clock, whatever the peers' clocks say.
//
// The mean is a sliding-window mean over the last window samples: it follows a link
// whose delay changes within window heartbeats, and with fixed delays plus jitter it is
// the plain sample mean the paper's scores assume (an EWMA would weight old and new
// samples unequally for no benefit at one heartbeat per second).
type monitor struct {
	self   int
	period int // heartbeat period in ticks; 0 disables heartbeats
	missed int // a peer silent for missed periods is dead
	window int
	ticks  int // ticks seen so far
	peers  []int
	state  map[int]*peerState
}

type peerState struct {
	samples []time.Duration // ring of the last window RTTs
	next    int
	heard   int // tick of the last message from the peer; -1 never
	rate    float64
}

func newMonitor(self int, peers []int, period, missed, window int) monitor {
	m := monitor{self: self, period: period, missed: missed, window: window, peers: peers,
		state: make(map[int]*peerState, len(peers))}
	for _, p := range peers {
		m.state[p] = &peerState{heard: -1}
	}
	return m
}

// tick counts a tick and returns the pings due: one round at the first tick, then one
// every period.
func (m *monitor) tick(now time.Duration, rate float64) []Message {
	m.ticks++
	if m.period == 0 || (m.ticks-1)%m.period != 0 {
		return nil
	}
	out := make([]Message, 0, len(m.peers))
	for _, p := range m.peers {
		out = append(out, Message{Type: MsgPing, From: m.self, To: p, Clock: now, Rate: rate})
	}
	return out
}

// heard records that a message from p arrived: any message proves p alive.
func (m *monitor) heard(p int) {
	if s := m.state[p]; s != nil {
		s.heard = m.ticks
	}
}

// ping answers a heartbeat and notes the sender's rate.
func (m *monitor) ping(in Message, rate float64) Message {
	m.state[in.From].rate = in.Rate
	return Message{Type: MsgPong, From: m.self, To: in.From, Clock: in.Clock, Rate: rate}
}

// pong takes an RTT sample from the echoed clock value.
func (m *monitor) pong(now time.Duration, in Message) {
	s := m.state[in.From]
	s.rate = in.Rate
	rtt := now - in.Clock
	if rtt < 0 {
		return // an echo from the future is a driver bug or a forged pong: ignore it
	}
	if len(s.samples) < m.window {
		s.samples = append(s.samples, rtt)
		return
	}
	s.samples[s.next] = rtt
	s.next = (s.next + 1) % m.window
}

func (m *monitor) alive(p int) bool {
	s := m.state[p]
	return s != nil && s.heard >= 0 && m.ticks-s.heard <= m.missed*m.period
}

// meanRTT is the window mean in ms; ok is false without samples.
func (m *monitor) meanRTT(p int) (float64, bool) {
	s := m.state[p]
	if s == nil || len(s.samples) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, r := range s.samples {
		sum += r
	}
	return float64(sum) / float64(len(s.samples)) / float64(time.Millisecond), true
}

// ready is false until every peer was measured or had its chance to answer (Sec. 5:
// the first election blocks get-score until enough is known). Without heartbeats there
// is nothing to wait for.
func (m *monitor) ready() bool {
	if m.period == 0 || m.ticks > m.missed*m.period {
		return true
	}
	for _, p := range m.peers {
		if _, ok := m.meanRTT(p); !ok {
			return false
		}
	}
	return true
}

// view lists the live, measured peers except exclude, as oracles see them (N').
func (m *monitor) view(exclude int) map[int]PeerView {
	out := make(map[int]PeerView, len(m.peers))
	for _, p := range m.peers {
		if p == exclude || !m.alive(p) {
			continue
		}
		if rtt, ok := m.meanRTT(p); ok {
			out[p] = PeerView{RTT: rtt, Rate: m.state[p].rate}
		}
	}
	return out
}

// PeerStatus is what the monitor knows about one peer, for drivers to record.
type PeerStatus struct {
	ID      int
	Alive   bool
	RTT     float64 // mean RTT in ms over the window; 0 without samples
	Samples int
	Rate    float64 // the rate its last heartbeat carried (req/s)
}

func (m *monitor) status() []PeerStatus {
	out := make([]PeerStatus, 0, len(m.peers))
	for _, p := range m.peers {
		rtt, _ := m.meanRTT(p)
		out = append(out, PeerStatus{ID: p, Alive: m.alive(p), RTT: rtt,
			Samples: len(m.state[p].samples), Rate: m.state[p].rate})
	}
	return out
}
