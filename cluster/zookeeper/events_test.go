package zookeeper

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/polebench/polebench/event"
)

// TestParseZKLine: the log lines of Debian's ZooKeeper 3.8 (slf4j-simple, as the
// harness configures it) that make a server's timeline, and lines that do not.
func TestParseZKLine(t *testing.T) {
	at := func(s string) int64 {
		v, err := time.Parse(logTimeGo, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UnixNano()
	}
	const peer = " [QuorumPeer[myid=3](plain=127.0.0.1:21831)(secure=disabled)] INFO org.apache.zookeeper.server.quorum."
	for _, tc := range []struct {
		line string
		want event.Event
		ok   bool
	}{
		{"2026-11-25T01:01:06.179Z" + peer + "QuorumPeer - LOOKING",
			event.Event{TimeNS: at("2026-11-25T01:01:06.179Z"), Server: 3, Kind: event.Looking}, true},
		{"2026-11-25T01:01:06.180Z" + peer + "FastLeaderElection - New election. My id = 3, proposed zxid=0x100000a2d",
			event.Event{TimeNS: at("2026-11-25T01:01:06.180Z"), Server: 3, Kind: event.Election, Zxid: 0x100000a2d}, true},
		{"2026-11-25T01:01:06.796+01:00" + peer + "QuorumPeer - LEADING",
			event.Event{TimeNS: at("2026-11-25T01:01:06.796+01:00"), Server: 3, Kind: event.Leading, Leader: 3}, true},
		{"2026-11-25T01:01:06.788Z" + peer + "QuorumPeer - FOLLOWING",
			event.Event{TimeNS: at("2026-11-25T01:01:06.788Z"), Server: 3, Kind: event.Following}, true},
		{"2026-11-25T01:01:07.216Z" + peer + "Leader - Have quorum of supporters, sids: [[2, 3]]; starting up and setting last processed zxid: 0x200000000",
			event.Event{TimeNS: at("2026-11-25T01:01:07.216Z"), Server: 3, Kind: event.Synced, Leader: 3, Epoch: 2}, true},
		{"2026-11-25T01:01:07.375Z" + peer + "QuorumPeer - Peer state changed: following - broadcast",
			event.Event{TimeNS: at("2026-11-25T01:01:07.375Z"), Server: 3, Kind: event.Synced}, true},
		{"=== polebench: start 2 of p3 at 2026-11-25T01:05:45.473061553Z",
			event.Event{TimeNS: at("2026-11-25T01:05:45.473Z") + 61553, Server: 3, Kind: event.Started}, true},
		// Not events: the leader's own summary line, another class's LEADING, garbage.
		{"2026-11-25T01:01:06.860Z" + peer + "Leader - LEADING - LEADER ELECTION TOOK - 679 MS", event.Event{}, false},
		{"2026-11-25T01:01:06.860Z [x] INFO org.example.Other - LEADING", event.Event{}, false},
		{"java.io.EOFException", event.Event{}, false},
		{"", event.Event{}, false},
	} {
		got, ok := parseLine(3, tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseLine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// TestZKElectionRewrite: the proxy replaces the sender's own election address in
// QuorumCnxManager's initial message with the back link's, keeping version and sid,
// and passes the pre-3.5 form (a bare sid) through.
func TestZKElectionRewrite(t *testing.T) {
	msg := func(version int64, sid int64, addr string) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, version)
		binary.Write(&b, binary.BigEndian, sid)
		binary.Write(&b, binary.BigEndian, int32(len(addr)))
		b.WriteString(addr)
		return b.Bytes()
	}
	rw := electionRewrite("127.0.0.1:40001")
	in := append(msg(-65535, 2, "127.0.0.1:3888"), []byte("vote")...)
	r := bytes.NewReader(in)
	got, err := rw(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := msg(-65535, 2, "127.0.0.1:40001"); !bytes.Equal(got, want) {
		t.Errorf("rewritten %x, want %x", got, want)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "vote" {
		t.Errorf("the rest of the stream: %q, want the votes untouched", rest)
	}
	old := binary.BigEndian.AppendUint64(nil, 5)
	if got, err := rw(bytes.NewReader(old)); err != nil || !bytes.Equal(got, old) {
		t.Errorf("a bare sid: %x, %v", got, err)
	}
	if _, err := rw(bytes.NewReader(msg(-65535, 2, "")[:20])); err == nil {
		t.Error("an empty address was accepted")
	}
}
