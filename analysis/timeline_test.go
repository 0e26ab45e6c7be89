package analysis

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/zxid"
)

// node is a node's event at ms on the run's clock.
func node(ms float64, server int, kind event.Kind, z zxid.Zxid) record.Record {
	return record.Record{AtMS: ms, Event: event.Event{Server: server, Kind: kind, Zxid: z}, Source: record.SourceNode}
}

func fault(ms float64, k nemesis.Kind, server int, err error) record.Record {
	at := time.Duration(ms * float64(time.Millisecond))
	return record.Fault(nemesis.Executed{Fault: nemesis.Fault{At: at, Kind: k, Server: server}, Issued: at, Err: err})
}

func TestFindEvents(t *testing.T) {
	base := Events{WarmupEnd: 5 * time.Second, End: 30 * time.Second, InitialLeader: 5}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	tests := []struct {
		name string
		tl   []record.Record
		want Events
	}{
		{"no crash", []record.Record{node(10, 5, event.Leading, 0), node(20, 5, event.FirstCommit, 1)}, base},
		{"a kill that is not the crash does not count", []record.Record{
			fault(1000, nemesis.Kill, 1, nil), node(1100, 5, event.FirstCommit, 9)}, base},
		{"a failed crash does not count, and is named", []record.Record{
			fault(15000, nemesis.Crash, 5, errors.New("gone")), node(15300, 4, event.FirstCommit, 9)},
			Events{WarmupEnd: base.WarmupEnd, End: base.End, InitialLeader: 5, FailedFaults: []string{"crash of p5 at 15.0 s: gone"}}},
		{"two-dc: p4 leads after the crash", []record.Record{
			node(0, 5, event.Leading, 0x100000000),
			fault(15000, nemesis.Crash, 5, nil),
			node(15010, 4, event.Election, 0x100000010), node(15011, 3, event.Election, 0x100000010),
			node(15012, 2, event.Election, 0x10000000f), node(15013, 1, event.Election, 0x100000010),
			node(15200, 4, event.Leading, 0x100000010), node(15250, 3, event.Following, 0),
			node(15450, 4, event.FirstCommit, 0x200000001), node(15460, 3, event.FirstCommit, 0x200000001),
			node(16000, 2, event.Election, 0x200000001), // after LEADING: a late election of its own
		}, Events{WarmupEnd: base.WarmupEnd, End: base.End, InitialLeader: 5, Crash: ms(15000), NewLeader: 4,
			Leading: ms(15200), Elected: ms(15200), FirstCommit: ms(15450), Leadings: 1,
			ElectionZxids: map[int]uint64{1: 0x100000010, 2: 0x10000000f, 3: 0x100000010, 4: 0x100000010}}},
		{"a server looking since before the crash is in its election", []record.Record{
			node(0, 5, event.Leading, 0x100000000), node(0, 4, event.Following, 0),
			node(14000, 4, event.Election, 0x100000005), node(14001, 4, event.Following, 0), // found p5 again
			node(14467, 1, event.Election, 0x100000002), node(14468, 1, event.Looking, 0), // restarted, cut
			fault(15000, nemesis.Crash, 5, nil),
			node(15010, 4, event.Election, 0x100000010),
			node(15200, 4, event.Leading, 0x100000010), node(15450, 4, event.FirstCommit, 0x200000001),
		}, Events{WarmupEnd: base.WarmupEnd, End: base.End, InitialLeader: 5, Crash: ms(15000), NewLeader: 4,
			Leading: ms(15200), Elected: ms(15200), FirstCommit: ms(15450), Leadings: 1,
			ElectionZxids: map[int]uint64{1: 0x100000002, 4: 0x100000010}}},
		{"the leader that commits first is the new one, its last LEADING counts", []record.Record{
			fault(15000, nemesis.Crash, 5, nil),
			node(15200, 3, event.Leading, 7), node(15300, 3, event.Looking, 0),
			node(15500, 4, event.Leading, 7), node(15800, 4, event.FirstCommit, 8),
		}, Events{WarmupEnd: base.WarmupEnd, End: base.End, InitialLeader: 5, Crash: ms(15000), NewLeader: 4,
			Leading: ms(15500), Elected: ms(15500), FirstCommit: ms(15800), Leadings: 1}},
		{"a leader that led twice before its first commit, and a failed outdate", []record.Record{
			fault(14000, nemesis.Outdate, 1, errors.New("p5: cut: connection refused")),
			fault(15000, nemesis.Crash, 5, nil),
			node(15200, 1, event.Leading, 7), node(15900, 1, event.Looking, 0),
			node(16200, 1, event.Leading, 9), node(16300, 1, event.FirstCommit, 10),
		}, Events{WarmupEnd: base.WarmupEnd, End: base.End, InitialLeader: 5, Crash: ms(15000), NewLeader: 1,
			Leading: ms(16200), Elected: ms(16200), FirstCommit: ms(16300), Leadings: 2,
			FailedFaults: []string{"outdate of p1 at 14.0 s: p5: cut: connection refused"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FindEvents(tc.tl, base); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestPredict(t *testing.T) {
	sp, err := spec.Resolve("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	pred, err := sp.Model()
	if err != nil {
		t.Fatal(err)
	}
	rates := sp.RatesByDC()
	t.Run("after the crash, with the leader elected", func(t *testing.T) {
		p := Predict(pred, score.History, rates, Events{NewLeader: 4}, true)
		// paper-facts: before, D1 20.9 and D2 0.2 (p5 leads); after, D1 41.5 and D2 20.8 (p4).
		for _, c := range []struct {
			win, dc string
			want    float64
		}{{"before", "D1", 20.85}, {"before", "D2", 0.17}, {"after", "D1", 41.5}, {"after", "D2", 20.8}} {
			if got := p.MS[c.win][c.dc]; math.Abs(got-c.want) > 0.05 {
				t.Errorf("%s %s = %.2f, want %.2f", c.win, c.dc, got, c.want)
			}
		}
		if p.Note != "model elects p4 with history" {
			t.Errorf("note %q", p.Note)
		}
	})
	t.Run("history picks a server that was ahead", func(t *testing.T) {
		zx := map[int]uint64{1: 0x100000010, 2: 0x100000010, 3: 0x100000011, 4: 0x100000010}
		p := Predict(pred, score.History, rates, Events{NewLeader: 3, ElectionZxids: zx}, true)
		want := "model elects p4 with history; p3 was ahead at the crash (p1 0x100000010, p2 0x100000010, p3 0x100000011, p4 0x100000010), so history picks it"
		if p.Note != want {
			t.Errorf("note\n got %q\nwant %q", p.Note, want)
		}
		if _, ok := p.MS["after"]; !ok {
			t.Error("no after prediction for the leader actually elected")
		}
	})
	t.Run("no crash, no after window", func(t *testing.T) {
		p := Predict(pred, score.Rotating, rates, Events{}, false)
		if _, ok := p.MS["after"]; ok || p.Note != "model elects p1 with rotating" {
			t.Errorf("%+v", p)
		}
	})
	if got := YClip(map[string]map[string]float64{"after": {"D1": 41.5}}); got != 124.5 {
		t.Errorf("YClip = %v", got)
	}
}

func TestBehindAtCrash(t *testing.T) {
	var recs []workload.Record
	for z := int64(1); z <= 10; z++ {
		recs = append(recs, workload.Record{Outcome: workload.OK, Zxid: 1<<32 | z})
	}
	recs = append(recs, workload.Record{Outcome: workload.Failed}) // no zxid: not a write anyone lacks
	got := behind(map[int]uint64{1: 1<<32 | 3, 2: 1<<32 | 10, 4: 1<<32 | 10}, recs, 1024)
	want := map[int]Behind{1: {7, 7 * 1024}, 2: {}, 4: {}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("behind = %v, want %v", got, want)
	}
	if behind(nil, recs, 1024) != nil {
		t.Fatal("behind without an election")
	}
}
