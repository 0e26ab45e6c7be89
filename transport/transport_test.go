package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/netem"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// cluster starts n transports that know each other.
func cluster(t *testing.T, n int, tweak func(*Config)) []*Transport {
	t.Helper()
	lns := map[int]net.Listener{}
	addrs := map[int]string{}
	for id := 1; id <= n; id++ {
		lns[id] = listen(t)
		addrs[id] = lns[id].Addr().String()
	}
	var ts []*Transport
	for id := 1; id <= n; id++ {
		peers := map[int]string{}
		for p, a := range addrs {
			if p != id {
				peers[p] = a
			}
		}
		cfg := Config{ID: id, Peers: peers}
		if tweak != nil {
			tweak(&cfg)
		}
		tr := New(context.Background(), lns[id], cfg)
		t.Cleanup(func() { tr.Close() })
		ts = append(ts, tr)
	}
	return ts
}

func recv(t *testing.T, tr *Transport) Message {
	t.Helper()
	select {
	case m := <-tr.Recv():
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
	}
	return Message{}
}

func TestFIFOPerPairAndChannel(t *testing.T) {
	ts := cluster(t, 3, nil)
	const k = 2000
	for i := 0; i < k; i++ {
		b := binary.BigEndian.AppendUint32(nil, uint32(i))
		if !ts[0].Send(3, Broadcast, b) || !ts[1].Send(3, Election, b) {
			t.Fatalf("send %d dropped", i)
		}
	}
	next := map[[2]int]uint32{}
	for i := 0; i < 2*k; i++ {
		m := recv(t, ts[2])
		key := [2]int{m.From, int(m.Channel)}
		got := binary.BigEndian.Uint32(m.Payload)
		if got != next[key] {
			t.Fatalf("from p%d on %v: got message %d, want %d", m.From, m.Channel, got, next[key])
		}
		next[key]++
	}
	if next[[2]int{1, int(Broadcast)}] != k || next[[2]int{2, int(Election)}] != k {
		t.Fatalf("counts %v", next)
	}
}

func TestUnknownPeerRefused(t *testing.T) {
	ts := cluster(t, 2, nil)
	if ts[0].Send(9, Election, []byte("x")) {
		t.Fatal("send to unknown peer accepted")
	}
	// A stranger claiming id 7 is cut off before anything it sends is delivered.
	c, err := net.Dial("tcp", ts[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var hdr [handshakeLen]byte
	binary.BigEndian.PutUint32(hdr[:4], magic)
	binary.BigEndian.PutUint32(hdr[4:8], 7)
	hdr[8] = byte(Election)
	var buf bytes.Buffer
	buf.Write(hdr[:])
	WriteFrame(&buf, []byte("intruder"))
	c.Write(buf.Bytes())
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection from unknown peer stayed open")
	}
	select {
	case m := <-ts[0].Recv():
		t.Fatalf("delivered %q from unknown peer %d", m.Payload, m.From)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestReconnectAfterPeerRestart(t *testing.T) {
	ln2 := listen(t)
	addr2 := ln2.Addr().String()
	ln1 := listen(t)
	t1 := New(context.Background(), ln1, Config{ID: 1, Peers: map[int]string{2: addr2}, MinBackoff: 5 * time.Millisecond})
	defer t1.Close()
	t2 := New(context.Background(), ln2, Config{ID: 2, Peers: map[int]string{1: ln1.Addr().String()}})
	t1.Send(2, Broadcast, []byte("before"))
	if m := recv(t, t2); string(m.Payload) != "before" {
		t.Fatalf("got %q", m.Payload)
	}
	t2.Close()
	waitEvent(t, t1, Event{Peer: 2, Channel: Broadcast, Up: false})

	ln2b, err := net.Listen("tcp", addr2)
	if err != nil {
		t.Fatal(err)
	}
	t2b := New(context.Background(), ln2b, Config{ID: 2, Peers: map[int]string{1: ln1.Addr().String()}})
	defer t2b.Close()
	waitEvent(t, t1, Event{Peer: 2, Channel: Broadcast, Up: true})
	t1.Send(2, Broadcast, []byte("after"))
	if m := recv(t, t2b); string(m.Payload) != "after" {
		t.Fatalf("got %q", m.Payload)
	}
}

func TestBroadcastOverflowResetsStream(t *testing.T) {
	// A peer that accepts but never reads: the queue fills and the stream is cut.
	ln := listen(t)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c // hold it open, never read
		}
	}()
	t1 := New(context.Background(), listen(t), Config{ID: 1, Peers: map[int]string{2: ln.Addr().String()}, QueueLen: 8})
	defer t1.Close()
	big := make([]byte, 1<<20)
	dropped := false
	for i := 0; i < 200 && !dropped; i++ {
		dropped = !t1.Send(2, Broadcast, big)
	}
	if !dropped {
		t.Fatal("a full broadcast queue never refused a message")
	}
	waitEvent(t, t1, Event{Peer: 2, Channel: Broadcast, Up: false})
}

func waitEvent(t *testing.T, tr *Transport, want Event) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-tr.Events():
			if e == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event %+v within 5s", want)
		}
	}
}

func TestFrameLimits(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFrame(&b, make([]byte, MaxFrame+1)); err == nil {
		t.Fatal("oversized frame written")
	}
	b.Reset()
	b.Write([]byte{0xff, 0xff, 0xff, 0xff})
	if _, err := ReadFrame(&b); err == nil {
		t.Fatal("oversized frame accepted")
	}
	b.Reset()
	WriteFrame(&b, []byte("hello"))
	b.Truncate(b.Len() - 1)
	if _, err := ReadFrame(&b); err == nil {
		t.Fatal("short frame accepted")
	}
	for _, n := range []int{0, 1, 4096} {
		b.Reset()
		p := bytes.Repeat([]byte{7}, n)
		WriteFrame(&b, p)
		got, err := ReadFrame(&b)
		if err != nil || !bytes.Equal(got, p) {
			t.Fatal(fmt.Sprint("round trip of ", n, " bytes: ", err))
		}
	}
}

// TestUserSpaceLink: with a user-space link, each message arrives no earlier than
// its stamped arrival, in order. Messages that departed survive the sender: closed
// while they are on the wire, it still has them delivered; messages its window had
// not let depart die with it. The delay is long beside a busy host's stalls, so which
// messages are on the wire at the close does not depend on the host.
func TestUserSpaceLink(t *testing.T) {
	const delay = 300 * time.Millisecond
	var sent sync.Map // payload -> stamped arrival
	var n atomic.Int32
	ts := cluster(t, 2, func(c *Config) {
		if c.ID == 1 {
			c.Schedule = func(to int, ch Channel, size int) (int64, int64, error) {
				now := netem.Now()
				if n.Add(1) > 21 { // the window is full: these would leave in 5 s
					return now + int64(5*time.Second), now + int64(5*time.Second+delay), nil
				}
				return now, now + int64(delay), nil
			}
		}
	})
	// The stream is connected before the test's messages go: the first one arrives.
	ts[0].Send(2, Broadcast, []byte("hello"))
	if m := recv(t, ts[1]); string(m.Payload) != "hello" {
		t.Fatalf("got %q, want hello", m.Payload)
	}
	for i := 0; i < 25; i++ {
		p := []byte(fmt.Sprintf("m%02d", i))
		sent.Store(string(p), netem.Now()+int64(delay))
		ts[0].Send(2, Broadcast, p)
	}
	time.Sleep(delay / 3) // the first 20 are on the wire, not yet arrived
	ts[0].Close()
	for i := 0; i < 20; i++ {
		m := recv(t, ts[1])
		now := netem.Now()
		if want := fmt.Sprintf("m%02d", i); string(m.Payload) != want {
			t.Fatalf("got %q, want %q", m.Payload, want)
		}
		at, _ := sent.Load(string(m.Payload))
		if early := at.(int64) - now; early > int64(200*time.Microsecond) {
			t.Fatalf("%s delivered %v early", m.Payload, time.Duration(early))
		}
	}
	select {
	case m := <-ts[1].Recv():
		t.Fatalf("%q had not departed when its sender died, yet arrived", m.Payload)
	case <-time.After(2 * delay):
	}
}

// A peer that dies closes its streams: the receiver hears it one link delay later, and
// only after everything the peer sent before (here held by a 30 ms user-space link).
func TestPeerCloseReportedAfterLinkDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	ts := cluster(t, 2, func(c *Config) {
		c.CloseDelay = func(int) time.Duration { return delay }
		c.Schedule = func(int, Channel, int) (int64, int64, error) {
			now := netem.Now()
			return now, now + int64(delay), nil
		}
	})
	t1, t2 := ts[0], ts[1]
	t1.Send(2, Broadcast, []byte("last words"))
	time.Sleep(5 * time.Millisecond) // let the frame reach t2's socket before t1 dies
	died := time.Now()
	t1.Close()
	var got Message
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got = <-t2.Recv():
			continue
		case e := <-t2.Events():
			if !e.Closed {
				continue
			}
			if e.Peer != 1 || e.Channel != Broadcast {
				t.Fatalf("closed event %+v", e)
			}
			if string(got.Payload) != "last words" {
				t.Fatalf("the close was reported before the last message (%q)", got.Payload)
			}
			if el := time.Since(died); el < delay {
				t.Fatalf("the close was reported %v after the peer died, before the link's %v", el, delay)
			}
			return
		case <-deadline:
			t.Fatal("no closed event within 5s")
		}
	}
}

// A cut on one side stops both directions; healing lets both flow again.
func TestCutStopsBothDirections(t *testing.T) {
	ts := cluster(t, 2, func(c *Config) { c.MinBackoff, c.MaxBackoff = 5*time.Millisecond, 20*time.Millisecond })
	t1, t2 := ts[0], ts[1]
	go func() { // t1's owner reads its events, as a node's loop does
		for range t1.Events() {
		}
	}()
	t1.Send(2, Broadcast, []byte("before"))
	if m := recv(t, t2); string(m.Payload) != "before" {
		t.Fatalf("got %q", m.Payload)
	}
	t2.Cut(1, true)
	waitEvent(t, t2, Event{Peer: 1, Channel: Broadcast, Closed: true}) // t1's stream to t2 was closed
	if t2.Send(1, Election, []byte("x")) {
		t.Fatal("a cut side sent to its peer")
	}
	for i := range 20 {
		t1.Send(2, Broadcast, fmt.Appendf(nil, "during %d", i))
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case m := <-t2.Recv():
		t.Fatalf("received %q through a cut", m.Payload)
	case <-time.After(100 * time.Millisecond):
	}
	t2.Cut(1, false)
	deadline := time.After(5 * time.Second)
	for i := 0; ; i++ {
		t1.Send(2, Broadcast, []byte("after"))
		select {
		case m := <-t2.Recv():
			if string(m.Payload) != "after" {
				t.Fatalf("after healing, got %q", m.Payload)
			}
			if !t2.Send(1, Election, []byte("y")) {
				t.Fatal("a healed side cannot send")
			}
			if m := recv(t, t1); string(m.Payload) != "y" {
				t.Fatalf("t1 got %q", m.Payload)
			}
			return
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("nothing flows after healing")
		}
	}
}

// A receiver that does not take its messages does not make the link late: the stamped
// messages behind a full receive queue are handed over only once it takes them again,
// long after their scheduled arrival, but that wait is the system's (a server busy
// loading a snapshot), not the host's, and the link's Lateness counts from when the
// receiver took the previous message. Counted from the schedule, the last messages
// would be at least block late; counted from the hand-over, only the host's delay is
// left, far under block even on a loaded host.
func TestLatenessOfBlockedReceiver(t *testing.T) {
	const block = 300 * time.Millisecond
	var late hiccup.Lateness
	ts := cluster(t, 2, func(c *Config) {
		if c.ID == 1 {
			c.Schedule = func(int, Channel, int) (int64, int64, error) {
				now := netem.Now()
				return now, now, nil // no delay: due at once
			}
		}
		c.Lateness = &late
	})
	ts[0].Send(2, Broadcast, []byte("hello"))
	recv(t, ts[1])
	late.Take()
	n := cap(ts[1].recv) + 100 // the last 100 wait for the receiver to take them
	for i := range n {
		for !ts[0].Send(2, Broadcast, []byte{byte(i)}) {
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(block) // every message has been stamped and is due before this ends
	for range n {
		recv(t, ts[1])
	}
	if s := late.Take(); s.N != int64(n) || s.Max >= block || s.P99 > s.Max {
		t.Errorf("lateness of %d messages: p99 %v, max %v; want %d, a max under %v (the block is the receiver's), p99 at most the max", s.N, s.P99, s.Max, n, block)
	}
}

// A one-way cut (t1 out to t2, t2 in from t1) stops t1's messages to t2 while t2's
// still reach t1; healing lets t1's flow again.
func TestCutOneWay(t *testing.T) {
	ts := cluster(t, 2, func(c *Config) { c.MinBackoff, c.MaxBackoff = 5*time.Millisecond, 20*time.Millisecond })
	t1, t2 := ts[0], ts[1]
	for _, tr := range ts {
		go func() {
			for range tr.Events() {
			}
		}()
	}
	t1.CutOneWay(2, true, true)
	t2.CutOneWay(1, false, true)
	if t1.Send(2, Broadcast, []byte("x")) {
		t.Fatal("a side cut on its way out sent")
	}
	deadline := time.After(5 * time.Second)
	for got := false; !got; {
		t2.Send(1, Broadcast, []byte("back"))
		select {
		case m := <-t1.Recv():
			got = string(m.Payload) == "back"
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("the other direction does not flow")
		}
	}
	select {
	case m := <-t2.Recv():
		t.Fatalf("received %q through a one-way cut", m.Payload)
	case <-time.After(100 * time.Millisecond):
	}
	t1.CutOneWay(2, true, false)
	t2.CutOneWay(1, false, false)
	deadline = time.After(5 * time.Second)
	for {
		t1.Send(2, Broadcast, []byte("after"))
		select {
		case m := <-t2.Recv():
			if string(m.Payload) == "after" {
				return
			}
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("nothing flows after healing")
		}
	}
}
