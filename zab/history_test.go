package zab

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

func mkHistory(base Zxid, zs ...Zxid) history {
	h := history{base: base}
	for _, z := range zs {
		h.ents = append(h.ents, Entry{Txn: Txn{Zxid: z}})
	}
	return h
}

func z(e Epoch, c uint32) Zxid { return MakeZxid(e, c) }

func TestSyncPlan(t *testing.T) {
	// The sender's (authoritative) history: epoch 1 up to 1.3, epoch 3 up to 3.2,
	// with everything up to 1.1 only as state (base), state applied at 3.1.
	leader := mkHistory(z(1, 1), z(1, 2), z(1, 3), z(3, 1), z(3, 2))
	applied := z(3, 1)
	for _, tc := range []struct {
		name string
		peer history
		want string
	}{
		{"same", mkHistory(0, z(1, 1), z(1, 2), z(1, 3), z(3, 1), z(3, 2)), "DIFF@3.2"},
		{"behind in window", mkHistory(0, z(1, 1), z(1, 2)), "DIFF@1.2"},
		{"at the base", mkHistory(0, z(1, 1)), "DIFF@1.1"},
		{"behind the window", mkHistory(0), "SNAP@3.1"},
		{"peer's state is ahead of base", mkHistory(z(1, 3)), "DIFF@1.3"},
		{"uncommitted tail of epoch 1", mkHistory(0, z(1, 1), z(1, 2), z(1, 3), z(1, 4), z(1, 5)), "TRUNC@1.3"},
		// The peer led epoch 2 and logged 2.1, 2.2 that no one else has; epoch 3
		// continued from 1.3. ZooKeeper 3.4's rule (truncate to our largest zxid
		// below the peer's last) says 1.3 in both cases below, which in the second
		// leaves the peer without 1.3 forever; the epoch summary finds 1.2.
		{"divergent epoch 2 after 1.3", mkHistory(0, z(1, 1), z(1, 2), z(1, 3), z(2, 1), z(2, 2)), "TRUNC@1.3"},
		{"divergent epoch 2 after 1.2 (peer lacks 1.3)", mkHistory(0, z(1, 1), z(1, 2), z(2, 1), z(2, 2)), "TRUNC@1.2"},
		{"divergent epoch 2 from the start", mkHistory(z(1, 1), z(2, 1)), "TRUNC@1.1"},
		{"divergent tail of epoch 3", mkHistory(z(1, 3), z(3, 1), z(3, 2), z(3, 3)), "TRUNC@3.2"},
		{"divergence below the window", mkHistory(0, z(2, 1)), "SNAP@3.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := leader.plan(tc.peer.summary(), applied).String()
			if got != tc.want {
				t.Fatalf("plan for %v = %s, want %s", fmt.Sprint(tc.peer.summary()), got, tc.want)
			}
		})
	}
}

func TestHistoryTrim(t *testing.T) {
	h := mkHistory(0, z(1, 1), z(1, 2), z(1, 3), z(1, 4), z(1, 5))
	h.trim(z(1, 4), 2) // keep 1.3, 1.4 at or below 1.4, and 1.5
	if h.base != z(1, 2) || len(h.ents) != 3 || h.ents[0].Zxid != z(1, 3) {
		t.Fatalf("after trim: base %v, %d entries from %v", h.base, len(h.ents), h.ents[0].Zxid)
	}
	if err := h.append([]Entry{{Txn: Txn{Zxid: z(1, 7)}}}); err == nil {
		t.Fatal("append with a gap accepted")
	}
	if err := h.append([]Entry{{Txn: Txn{Zxid: z(2, 1)}}}); err != nil {
		t.Fatalf("new epoch rejected: %v", err)
	}
}

func TestNewRejectsBadPersistedState(t *testing.T) {
	cfg := DefaultConfig(1, []int{1, 2, 3}, 100*time.Millisecond)
	for _, tc := range []struct {
		name string
		st   Persisted
	}{
		{"gap in log", Persisted{Log: []Txn{{Zxid: z(1, 1)}, {Zxid: z(1, 3)}}}},
		{"log not after snapshot", Persisted{Snapshot: z(1, 2), Log: []Txn{{Zxid: z(1, 5)}}}},
		{"snapshot not in log", Persisted{Snapshot: z(1, 5), Log: []Txn{{Zxid: z(1, 1)}, {Zxid: z(2, 1)}}}},
		{"current above accepted", Persisted{HardState: HardState{AcceptedEpoch: 1, CurrentEpoch: 2}}},
	} {
		if _, err := New(cfg, tc.st); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	withWindow := func(c Config, w int) Config { c.Window = w; return c }
	for _, bad := range []Config{
		DefaultConfig(0, []int{1}, time.Second),
		DefaultConfig(4, []int{1, 2, 3}, time.Second),
		DefaultConfig(1, []int{1, 1, 2}, time.Second),
		withWindow(DefaultConfig(1, []int{1, 2}, time.Second), -1),
		{ID: 1, Peers: []int{1, 2}}, // zero timers: not from DefaultConfig
	} {
		if _, err := New(bad, Persisted{}); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}

// TestHistoryIndex: the distance-from-the-last-entry path finds what a binary search
// finds, for zxids present, absent, in older epochs and beyond the ends.
func TestHistoryIndex(t *testing.T) {
	var h history
	for e := Epoch(1); e <= 3; e++ {
		for c := uint32(1); c <= 5; c++ {
			if e == 2 && c == 3 || e == 3 && c == 2 {
				continue // holes, as no log of ours has: the fallback to the search is exercised
			}
			h.ents = append(h.ents, Entry{Txn: Txn{Zxid: z(e, c)}})
		}
	}
	for e := Epoch(0); e <= 4; e++ {
		for c := uint32(0); c <= 7; c++ {
			q := z(e, c)
			want := sort.Search(len(h.ents), func(i int) bool { return h.ents[i].Zxid > q })
			if got := h.index(q); got != want {
				t.Errorf("index(%v) = %d, want %d", q, got, want)
			}
		}
	}
}

// TestDiffEntriesAreTheirOwn: a DIFF's entries stay as sent when the sender's history
// truncates and grows again over the array they came from (simulated links carry
// messages, not encodings).
func TestDiffEntriesAreTheirOwn(t *testing.T) {
	n, err := New(DefaultConfig(1, []int{1, 2, 3}, 50*time.Millisecond), Persisted{
		HardState: HardState{AcceptedEpoch: 1, CurrentEpoch: 1},
		Log:       []Txn{{Zxid: z(1, 1), Data: []byte("a")}, {Zxid: z(1, 2), Data: []byte("b")}, {Zxid: z(1, 3), Data: []byte("c")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.sendHistory(2, Summary{Last: 0})
	var diff *Message
	for i := range n.msgs {
		if n.msgs[i].Type == MsgDiff {
			diff = &n.msgs[i]
		}
	}
	if diff == nil || len(diff.Entries) != 3 {
		t.Fatalf("want one DIFF of 3 entries, got %v", n.msgs)
	}
	n.hist.truncate(z(1, 1))
	if err := n.hist.append([]Entry{{Txn: Txn{Zxid: z(2, 1), Data: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	if got := diff.Entries[1]; got.Zxid != z(1, 2) || string(got.Data) != "b" {
		t.Errorf("the DIFF's second entry changed under it: %v %q", got.Zxid, got.Data)
	}
}
