package transport

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
)

// A sender's death does not split a broadcast: every message it sent before dying
// that had departed reaches every peer, however far its streams' goroutines had got
// with them (here 4 peers x 2000 messages, sent at once and then the sender dies), and
// each peer hears the close after them. Before, a stream whose goroutine had not
// written a message when the transport closed dropped it, peer by peer (docs/crash.md).
func TestDeathDeliversWhatDepartedToEveryPeer(t *testing.T) {
	const k = 2000
	ts := cluster(t, 5, func(c *Config) {
		c.QueueLen = 2 * k
		c.Schedule = func(int, Channel, int) (int64, int64, error) {
			now := netem.Now()
			return now, now + int64(time.Millisecond), nil
		}
	})
	sender := ts[0]
	for to := 2; to <= 5; to++ { // connected before the test's messages go
		sender.Send(to, Broadcast, []byte("hello"))
		recv(t, ts[to-1])
	}
	payload := make([]byte, 1024)
	for i := range k {
		binary.BigEndian.PutUint32(payload, uint32(i))
		for to := 2; to <= 5; to++ {
			if !sender.Send(to, Broadcast, append([]byte(nil), payload...)) {
				t.Fatalf("send %d to %d refused", i, to)
			}
		}
	}
	sender.Die(netem.Now())
	got := make([]int, 6)
	errs := make(chan error, 4)
	for to := 2; to <= 5; to++ { // each peer read at once: none waits for the test
		go func() {
			r := ts[to-1]
			deadline := time.After(10 * time.Second)
			for {
				select {
				case m := <-r.Recv():
					if n := binary.BigEndian.Uint32(m.Payload); int(n) != got[to] {
						errs <- fmt.Errorf("p%d: message %d arrived as number %d", to, n, got[to])
						return
					}
					got[to]++
				case e := <-r.Events():
					if e.Closed && e.Peer == 1 {
						for range len(r.Recv()) { // what it delivered before the close
							<-r.Recv()
							got[to]++
						}
						errs <- nil
						return
					}
				case <-deadline:
					errs <- fmt.Errorf("p%d: no close within 10 s (%d messages)", to, got[to])
					return
				}
			}
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for to := 2; to <= 5; to++ {
		if got[to] != k {
			t.Errorf("p%d got %d of the %d messages its dead peer had sent", to, got[to], k)
		}
	}
}

// A message that had not departed when its sender died dies with it, however long
// the sender's stream takes to notice; one that had departed goes out even if the
// stream's timer woke late for it.
func TestDeathKeepsOnlyWhatDeparted(t *testing.T) {
	base := netem.Now()
	departs := map[string]int64{ // relative to base
		"early":   0,
		"on-time": int64(50 * time.Millisecond),
		"late":    int64(time.Hour),
	}
	next := make(chan int64, 4) // each message's departure, relative to base
	ts := cluster(t, 2, func(c *Config) {
		c.Schedule = func(int, Channel, int) (int64, int64, error) {
			d := base + <-next
			return d, d + int64(time.Millisecond), nil
		}
	})
	sender, r := ts[0], ts[1]
	next <- 0
	sender.Send(2, Broadcast, []byte("hello")) // connected before the test's messages go
	recv(t, r)
	for _, p := range []string{"early", "on-time", "late"} {
		next <- departs[p]
		sender.Send(2, Broadcast, []byte(p))
	}
	// The death 100 ms after base: "on-time" had departed by then, "late" had not.
	// (The stream is still waiting for "on-time"'s departure when it dies.)
	sender.Die(base + int64(100*time.Millisecond))
	var got []string
	deadline := time.After(5 * time.Second)
	for closed := false; !closed; {
		select {
		case m := <-r.Recv():
			got = append(got, string(m.Payload))
		case e := <-r.Events():
			if e.Closed {
				for range len(r.Recv()) {
					got = append(got, string((<-r.Recv()).Payload))
				}
				closed = true
			}
		case <-deadline:
			t.Fatalf("no close within 5 s (got %q)", got)
		}
	}
	if len(got) != 2 || got[0] != "early" || got[1] != "on-time" {
		t.Errorf("got %q, want [early on-time]", got)
	}
}

// When a peer dies, the break of the stream to it is reported only after the peer's
// own stream has delivered what the peer sent before dying: a TCP connection delivers
// its data before the FIN. Here the peer's messages take 50 ms on the link and the
// news of the break only 1 ms; before, a follower heard first that the stream to its
// leader broke, resynced (dropping the proposals still arriving) and entered the
// election behind followers a WAN away (docs/crash.md).
func TestBreakReportedAfterPeerStream(t *testing.T) {
	const delay = 50 * time.Millisecond
	ts := cluster(t, 2, func(c *Config) {
		c.CloseDelay = func(int) time.Duration { return time.Millisecond }
		c.Schedule = func(int, Channel, int) (int64, int64, error) {
			now := netem.Now()
			return now, now + int64(delay), nil
		}
	})
	leader, follower := ts[0], ts[1]
	follower.Send(1, Broadcast, []byte("ack")) // the follower's stream to its leader
	recv(t, leader)
	const k = 10
	for i := range k {
		leader.Send(2, Broadcast, []byte{byte(i)})
	}
	time.Sleep(delay / 5) // on the wire
	leader.Close()
	got := 0
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-follower.Recv():
			got++
		case e := <-follower.Events():
			if e.Peer != 1 || e.Up || e.Closed {
				continue
			}
			// The break of the follower's own stream: everything its leader sent
			// must have been handed over by now.
			if n := got + len(follower.Recv()); n != k {
				t.Fatalf("the break of the stream to the dead peer was reported with %d of its %d messages handed over", n, k)
			}
			return
		case <-deadline:
			t.Fatalf("no break reported within 5 s (%d messages)", got)
		}
	}
}
