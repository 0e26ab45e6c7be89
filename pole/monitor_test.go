package pole

import (
	"math"
	"testing"
	"time"
)

// pongAfter delivers p's pong to m's ping sent at the given clock, rtt later.
func pongAfter(m *monitor, p int, sent, rtt time.Duration, rate float64) {
	m.heard(p)
	m.pong(sent+rtt, Message{Type: MsgPong, From: p, To: m.self, Clock: sent, Rate: rate})
}

func TestMonitorWindowMeanAndRates(t *testing.T) {
	m := newMonitor(1, []int{2, 3}, 10, 3, 3)
	for i, rtt := range []time.Duration{100, 10, 20, 30} { // ms; the window keeps the last 3
		if pings := m.tick(time.Duration(i)*time.Second, 7); i == 0 && len(pings) != 2 {
			t.Fatalf("first tick: %d pings, want 2", len(pings))
		}
		pongAfter(&m, 2, time.Duration(i)*time.Second, rtt*time.Millisecond, 250)
	}
	if rtt, ok := m.meanRTT(2); !ok || math.Abs(rtt-20) > 1e-9 {
		t.Errorf("mean RTT %v, want 20 ms (the last 3 samples)", rtt)
	}
	if m.ready() {
		t.Error("ready before p3 answered or had its chance")
	}
	v := m.view(0)
	if len(v) != 1 || v[2].Rate != 250 {
		t.Errorf("view %v, want p2 alone with rate 250", v)
	}
	if len(m.view(2)) != 0 {
		t.Error("the excluded leader is still in the view")
	}
	// A ping carries the sender's rate; the pong carries ours.
	pong := m.ping(Message{Type: MsgPing, From: 3, To: 1, Clock: 42, Rate: 90}, 7)
	if pong.To != 3 || pong.Clock != 42 || pong.Rate != 7 || m.state[3].rate != 90 {
		t.Errorf("pong %v, p3's rate %v", pong, m.state[3].rate)
	}
	// An echo from the future is ignored.
	m.pong(0, Message{Type: MsgPong, From: 3, Clock: time.Hour})
	if _, ok := m.meanRTT(3); ok {
		t.Error("a negative RTT became a sample")
	}
}

func TestMonitorDropsSilentPeers(t *testing.T) {
	m := newMonitor(1, []int{2, 3}, 10, 3, 10)
	for tick := 0; tick < 60; tick++ {
		m.tick(time.Duration(tick)*10*time.Millisecond, 0)
		if tick%10 == 0 && tick < 20 { // p2 answers the first two rounds, then dies
			pongAfter(&m, 2, time.Duration(tick)*10*time.Millisecond, 5*time.Millisecond, 0)
		}
		switch tick {
		case 20:
			if !m.alive(2) || m.ready() {
				t.Fatalf("tick %d: p2 alive %v (want true), ready %v (want false: p3 may still answer)", tick, m.alive(2), m.ready())
			}
		case 31:
			if !m.ready() || m.alive(3) {
				t.Fatalf("tick %d: after 3 silent periods p3 is given up on: ready %v alive %v", tick, m.ready(), m.alive(3))
			}
		case 45:
			if m.alive(2) || len(m.view(0)) != 0 {
				t.Fatalf("tick %d: p2 silent for 3 periods should be dead: %+v", tick, m.status())
			}
		}
	}
}
