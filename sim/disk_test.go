package sim

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/zab"
)

// The disk's crash semantics: a log sync completes after the disk's latency and a kill
// before that loses the appends it covers; the hard state and a truncation are durable
// once written; a sync overtaken by a truncation covers nothing appended after it.
func TestDiskCrash(t *testing.T) {
	z := func(n uint64) zab.Zxid { return zab.Zxid(1<<32 | n) }
	appendOp := func(ns ...uint64) zab.Op {
		a := &zab.Append{}
		for _, n := range ns {
			a.Txns = append(a.Txns, zab.Txn{Zxid: z(n), Data: []byte(fmt.Sprint(n))})
		}
		return a
	}
	hs := zab.HardState{AcceptedEpoch: 1, CurrentEpoch: 1}
	type step struct {
		ops       []zab.Op
		now, done int64
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		crashAt int64
		want    []zab.Zxid
		wantHS  zab.HardState
	}{
		{"sync done", []step{{[]zab.Op{appendOp(1, 2)}, 0, 10}}, 10, []zab.Zxid{z(1), z(2)}, zab.HardState{}},
		{"sync pending", []step{{[]zab.Op{appendOp(1, 2)}, 0, 10}}, 9, nil, zab.HardState{}},
		{"hard state at once", []step{{[]zab.Op{&zab.SetHardState{HardState: hs}, appendOp(1)}, 0, 10}}, 5, nil, hs},
		{"syncs complete in order", []step{{[]zab.Op{appendOp(1)}, 0, 10}, {[]zab.Op{appendOp(2)}, 1, 5}}, 7, nil, zab.HardState{}},
		{"the second sync after the first", []step{{[]zab.Op{appendOp(1)}, 0, 10}, {[]zab.Op{appendOp(2)}, 1, 5}}, 10, []zab.Zxid{z(1), z(2)}, zab.HardState{}},
		{"a truncation is durable at once", []step{{[]zab.Op{appendOp(1, 2)}, 0, 0}, {[]zab.Op{&zab.Truncate{After: z(1)}}, 1, 1}}, 2, []zab.Zxid{z(1)}, zab.HardState{}},
		{"a sync overtaken by a truncation", []step{
			{[]zab.Op{appendOp(1, 2)}, 0, 10},
			{[]zab.Op{&zab.Truncate{After: z(1)}, appendOp(2)}, 1, 20},
		}, 15, []zab.Zxid{z(1)}, zab.HardState{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d disk
			log := slog.New(slog.DiscardHandler)
			if _, err := d.restore(replica.Config{}, log); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.steps {
				if _, err := d.persist(s.ops, s.now, s.done); err != nil {
					t.Fatal(err)
				}
			}
			d.crash(tc.crashAt)
			r, err := d.restore(replica.Config{}, log)
			if err != nil {
				t.Fatal(err)
			}
			var got []zab.Zxid
			for _, txn := range r.Persisted.Log {
				got = append(got, txn.Zxid)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || r.Persisted.HardState != tc.wantHS {
				t.Fatalf("after a crash at %d: log %v, hard state %+v; want %v, %+v", tc.crashAt, got, r.Persisted.HardState, tc.want, tc.wantHS)
			}
		})
	}
}
