package etcd

import (
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/zxid"
)

// etcd 3.4's own log lines (zap, --logger zap) become the timeline's events; the
// vote request after "became candidate" is the ELECTION, with (logterm, index).
func TestParseLines(t *testing.T) {
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixNano()
	}
	p := &parser{id: 1}
	for _, tc := range []struct {
		line string
		want event.Event
		ok   bool
	}{
		{"=== polebench: start 1 of p1 at 2026-12-01T22:25:25.100000001Z", event.Event{TimeNS: at("2026-12-01T22:25:25.100000001Z"), Server: 1, Kind: event.Started}, true},
		{`{"level":"info","ts":"2026-12-01T22:25:29.272Z","caller":"raft/raft.go:719","msg":"4036b1db24775ea0 became candidate at term 3"}`, event.Event{}, false},
		{`{"level":"info","ts":"2026-12-01T22:25:29.273Z","caller":"raft/raft.go:817","msg":"4036b1db24775ea0 [logterm: 2, index: 8] sent MsgVote request to 2737ecedbf2a9065 at term 3"}`,
			event.Event{TimeNS: at("2026-12-01T22:25:29.273Z"), Server: 1, Kind: event.Election, Epoch: 3, Zxid: zxid.Zxid(2<<32 | 8)}, true},
		{`{"level":"info","ts":"2026-12-01T22:25:29.273Z","caller":"raft/raft.go:817","msg":"4036b1db24775ea0 [logterm: 2, index: 8] sent MsgVote request to 80af5d65a6e2f603 at term 3"}`, event.Event{}, false},
		{`{"level":"info","ts":"2026-12-01T22:25:29.272Z","caller":"raft/node.go:333","msg":"raft.node: 4036b1db24775ea0 lost leader 2737ecedbf2a9065 at term 3"}`,
			event.Event{TimeNS: at("2026-12-01T22:25:29.272Z"), Server: 1, Kind: event.Looking, Epoch: 3, Reason: "lost its leader"}, true},
		{`{"level":"info","ts":"2026-12-01T22:25:29.290Z","caller":"raft/raft.go:771","msg":"4036b1db24775ea0 became leader at term 3"}`,
			event.Event{TimeNS: at("2026-12-01T22:25:29.290Z"), Server: 1, Kind: event.Leading, Leader: 1, Epoch: 3}, true},
		{`{"level":"info","ts":"2026-12-01T22:25:29.290Z","caller":"raft/node.go:327","msg":"raft.node: 4036b1db24775ea0 elected leader 4036b1db24775ea0 at term 3"}`, event.Event{}, false},
		{`{"level":"info","ts":"2026-12-01T22:25:31.507Z","caller":"raft/node.go:327","msg":"raft.node: 4036b1db24775ea0 elected leader 2737ecedbf2a9065 at term 4"}`,
			event.Event{TimeNS: at("2026-12-01T22:25:31.507Z"), Server: 1, Kind: event.Following, Epoch: 4}, true},
		{`{"level":"warn","ts":"2026-12-01T22:25:31.600Z","caller":"rafthttp/probing_status.go:70","msg":"prober detected unhealthy status"}`, event.Event{}, false},
		{`not json`, event.Event{}, false},
	} {
		got, ok := p.line(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
	// With pre-vote: the pre-candidacy is the campaign; the candidacy a won pre-vote
	// leads to is not a second one, a transfer's candidacy (no pre-vote) is.
	pre := &parser{id: 2}
	for _, tc := range []struct {
		msg  string
		want event.Event
		ok   bool
	}{
		{"c3 became pre-candidate at term 3", event.Event{}, false},
		{"c3 [logterm: 3, index: 9] sent MsgPreVote request to 2737ecedbf2a9065 at term 3",
			event.Event{TimeNS: at("2026-12-01T22:25:29.273Z"), Server: 2, Kind: event.Election, Epoch: 4, Zxid: zxid.Zxid(3<<32 | 9)}, true},
		{"c3 [logterm: 3, index: 9] sent MsgPreVote request to 80af5d65a6e2f603 at term 3", event.Event{}, false},
		{"c3 became candidate at term 4", event.Event{}, false},
		{"c3 [logterm: 3, index: 9] sent MsgVote request to 2737ecedbf2a9065 at term 4", event.Event{}, false},
		{"c3 became pre-candidate at term 4", event.Event{}, false},
		{"c3 became follower at term 4", event.Event{}, false},
		{"c3 became candidate at term 5", event.Event{}, false},
		{"c3 [logterm: 4, index: 12] sent MsgVote request to 2737ecedbf2a9065 at term 5",
			event.Event{TimeNS: at("2026-12-01T22:25:29.273Z"), Server: 2, Kind: event.Election, Epoch: 5, Zxid: zxid.Zxid(4<<32 | 12)}, true},
	} {
		line := `{"level":"info","ts":"2026-12-01T22:25:29.273Z","caller":"raft/raft.go:817","msg":"` + tc.msg + `"}`
		if got, ok := pre.line(line); ok != tc.ok || got != tc.want {
			t.Errorf("pre-vote %s:\n got %+v, %v\nwant %+v, %v", tc.msg, got, ok, tc.want, tc.ok)
		}
	}
	if p.leader != 0x2737ecedbf2a9065 {
		t.Errorf("the FOLLOWING's leader %x, want 2737ecedbf2a9065", p.leader)
	}
}

// Raft's set: survivors whose log a majority of the cluster would vote for.
func TestCanWin(t *testing.T) {
	log := func(term, index uint64) uint64 { return term<<32 | index }
	for _, tc := range []struct {
		name      string
		survivors []int
		n         int
		logs      map[int]uint64
		want      []int
	}{
		{"in sync", []int{1, 2, 3, 4}, 5, map[int]uint64{1: log(2, 8), 2: log(2, 8), 3: log(2, 8), 4: log(2, 8)}, []int{1, 2, 3, 4}},
		{"nothing known", []int{1, 2, 3, 4}, 5, nil, []int{1, 2, 3, 4}},
		{"one behind", []int{1, 2, 3, 4}, 5, map[int]uint64{1: log(2, 7), 2: log(2, 8), 3: log(2, 8), 4: log(2, 8)}, []int{2, 3, 4}},
		{"one ahead", []int{1, 2, 3, 4}, 5, map[int]uint64{1: log(2, 9), 2: log(2, 8), 3: log(2, 8), 4: log(2, 8)}, []int{1, 2, 3, 4}},
		{"two ahead of two", []int{1, 2, 3, 4}, 5, map[int]uint64{1: log(2, 9), 2: log(2, 9), 3: log(2, 8), 4: log(2, 8)}, []int{1, 2}},
		{"a newer term wins over a longer log", []int{1, 2, 3}, 5, map[int]uint64{1: log(3, 5), 2: log(2, 9), 3: log(2, 9)}, []int{1}},
		{"no quorum left", []int{1, 2}, 5, nil, nil},
	} {
		got := CanWin(tc.survivors, tc.n, tc.logs)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: CanWin = %v, want %v", tc.name, got, tc.want)
		}
	}
}
