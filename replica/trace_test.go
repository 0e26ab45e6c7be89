package replica

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/zab"
)

// TestTraceMarksEachStep: in a 3-node ensemble with Trace on, every write a client
// sends to a follower or to the leader gets each step marked, by the server that took
// it, in causal order across servers (they share one clock). Without Trace nothing is
// marked and GET /trace says so.
func TestTraceMarksEachStep(t *testing.T) {
	cfgs, lns := ensemble(t, 3)
	cfgs[0].Trace, cfgs[1].Trace, cfgs[2].Trace = true, true, true
	nodes := make([]*Node, 3)
	for i, c := range cfgs {
		n, err := Start(context.Background(), c, lns[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		defer n.Stop()
	}
	for _, n := range nodes {
		waitServing(t, n)
	}
	const leader = 3           // the initial leader
	writes := map[uint64]int{} // zxid -> the server its client talked to
	for _, s := range []int{1, leader} {
		c, _, err := zk.Connect([]string{cfgs[s-1].Self().ClientAddr()}, 5*time.Second, zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			st, err := c.Set("/", []byte(fmt.Sprint(i)), -1)
			if err != nil {
				t.Fatal(err)
			}
			writes[uint64(st.Mzxid)] = s
		}
		c.Close()
	}
	// Every mark read below is made before the serving server queues the reply (the
	// deciding follower's ACK and the leader's commit come before it), so the client
	// having its replies is enough: nothing is waited for.
	marks := map[int]map[uint64]map[trace.Kind]trace.Mark{}
	for i, n := range nodes {
		id := i + 1
		marks[id] = map[uint64]map[trace.Kind]trace.Mark{}
		p := n.trace.Since(0, 0)
		if p.Lost != 0 {
			t.Fatalf("p%d lost %d marks", id, p.Lost)
		}
		for _, m := range p.Marks {
			z := uint64(m.Zxid)
			if marks[id][z] == nil {
				marks[id][z] = map[trace.Kind]trace.Mark{}
			}
			marks[id][z][m.Kind] = m
		}
	}
	for z, s := range writes {
		at := func(server int, k trace.Kind) trace.Mark {
			t.Helper()
			m, ok := marks[server][z][k]
			if !ok {
				t.Fatalf("zxid %#x (client at p%d): p%d has no %v mark; it has %v", z, s, server, k, marks[server][z])
			}
			return m
		}
		q := at(leader, trace.Quorum)
		f := int(q.Peer)
		if f != 1 && f != 2 {
			t.Fatalf("zxid %#x: quorum completed by p%d, want a follower", z, f)
		}
		chain := []trace.Mark{at(s, trace.Recv), at(s, trace.Submit), at(leader, trace.Arrived), at(leader, trace.Proposed),
			at(f, trace.PropArrived), at(f, trace.Acked), q, at(leader, trace.Committed)}
		if s != leader {
			chain = append(chain, at(s, trace.CommitArrived))
		} else if _, ok := marks[s][z][trace.CommitArrived]; ok {
			t.Fatalf("zxid %#x: the leader marked a COMMIT's arrival", z)
		}
		chain = append(chain, at(s, trace.Applied), at(s, trace.Reply))
		for i := 1; i < len(chain); i++ {
			if chain[i].At < chain[i-1].At {
				t.Fatalf("zxid %#x (client at p%d): %v at %d before %v at %d", z, s, chain[i].Kind, chain[i].At, chain[i-1].Kind, chain[i-1].At)
			}
		}
		if s == leader && chain[2].At != chain[1].At {
			t.Fatalf("zxid %#x: on the leader a write arrives when it is submitted", z)
		}
	}

	// Off: no marks, and the endpoint says why.
	cfgs2, lns2 := ensemble(t, 1)
	n, err := Start(context.Background(), cfgs2[0], lns2[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if n.trace != nil {
		t.Fatal("a node without Trace keeps a trace")
	}
	resp, err := http.Get("http://" + cfgs2[0].Self().AdminAddr() + "/trace?from=0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /trace without Trace: %s, want 404", resp.Status)
	}
}

// markIO is the part of IO a tracer uses: a clock and a place for marks.
type markIO struct {
	IO
	now   time.Duration
	marks []trace.Mark
}

func (io *markIO) Now() time.Duration { return io.now }
func (io *markIO) Mark(m trace.Mark)  { io.marks = append(io.marks, m) }

// TestTraceQuorumIsTheCoveringAck: a leader steps several ACKs before it drains (group
// commit). Each commit's quorum is the latest ACK that covers it (ACKs are cumulative:
// one for a newer write covers an older one), not the latest ACK:
// a slow follower's ACK for an older proposal, arriving last, did not complete the
// newer one's quorum, and its sender may not have acknowledged it yet. A commit no
// stepped ACK covers was completed by the leader's own log.
func TestTraceQuorumIsTheCoveringAck(t *testing.T) {
	const e = zab.Epoch(2)
	z := func(c uint32) zab.Zxid { return zab.MakeZxid(e, c) }
	io := &markIO{}
	tr := newTracer(3, io)
	st := zab.Status{Role: zab.Leading, Serving: true, Epoch: e}
	tr.step(100, zab.Message{Type: zab.MsgAck, From: 2, Zxid: z(2)})
	tr.step(150, zab.Message{Type: zab.MsgAck, From: 1, Zxid: z(1)})
	io.now = 170
	tr.ready(zab.Ready{Committed: []zab.Txn{{Zxid: z(1)}, {Zxid: z(2)}}}, st)
	tr.step(200, zab.Message{Type: zab.MsgAck, From: 1, Zxid: z(2)})
	io.now = 260
	tr.ready(zab.Ready{Committed: []zab.Txn{{Zxid: z(3)}}}, st)
	tr.step(300, zab.Message{Type: zab.MsgAck, From: 1, Zxid: z(5)})
	tr.step(310, zab.Message{Type: zab.MsgAck, From: 2, Zxid: z(6)})
	io.now = 330
	tr.ready(zab.Ready{Committed: []zab.Txn{{Zxid: z(4)}, {Zxid: z(5)}, {Zxid: z(6)}}}, st)
	tr.step(400, zab.Message{Type: zab.MsgAck, From: 2, Zxid: z(8)})
	tr.step(400, zab.Message{Type: zab.MsgAck, From: 1, Zxid: z(8)})
	io.now = 420
	tr.ready(zab.Ready{Committed: []zab.Txn{{Zxid: z(7)}, {Zxid: z(8)}}}, st)

	type q struct {
		at   int64
		peer uint8
	}
	got := map[zab.Zxid]q{}
	for _, m := range io.marks {
		if m.Kind == trace.Quorum {
			got[m.Zxid] = q{m.At, m.Peer}
		}
	}
	want := map[zab.Zxid]q{
		z(1): {150, 1}, // both cover it; p1's is the later
		z(2): {100, 2}, // p1's later ACK was for z(1) only
		z(3): {260, 3}, // the ACK stepped since covers only z(2): the leader's own log
		z(4): {310, 2}, // p2's covers it too, and came later than p1's
		z(5): {310, 2},
		z(6): {310, 2},
		z(7): {400, 1}, // at one instant, the one stepped last
		z(8): {400, 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("quorum marks %v, want %v", got, want)
	}
}
