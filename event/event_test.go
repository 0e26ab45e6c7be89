package event

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTimelineStampsAndKeepsKinds(t *testing.T) {
	now := time.Unix(100, 5)
	tl := NewTimelineClock(3, func() time.Time { return now })
	tl.Add(Event{Kind: Leading, Epoch: 2, Zxid: 0x200000000})
	now = now.Add(time.Millisecond)
	tl.Add(Event{Kind: FirstCommit, Zxid: 0x200000001})
	ev := tl.Events()
	if len(ev) != 2 || ev[0].Server != 3 || ev[0].TimeNS != time.Unix(100, 5).UnixNano() || ev[1].Time().Sub(ev[0].Time()) != time.Millisecond {
		t.Fatalf("events %+v", ev)
	}
	b, err := json.Marshal(ev[1])
	if err != nil {
		t.Fatal(err)
	}
	// events.jsonl keeps the names it always had.
	if want := `{"time_ns":100001000005,"server":3,"kind":"FIRST_COMMIT","zxid":8589934593}`; string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
	// The election's epoch has a name of its own beside the broadcast's.
	b, err = json.Marshal(Event{TimeNS: 1, Server: 2, Kind: Elected, ElectionEpoch: 3, Leader: 4})
	if want := `{"time_ns":1,"server":2,"kind":"ELECTED","election_epoch":3,"leader":4}`; err != nil || string(b) != want {
		t.Fatalf("JSON %s (%v), want %s", b, err, want)
	}
	ev[0].Kind = Failed // a copy
	if tl.Events()[0].Kind != Leading {
		t.Fatal("Events returned the timeline's own slice")
	}
}
