package record

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
)

func TestTimelineMergesAndRoundTrips(t *testing.T) {
	start := time.Unix(1000, 0)
	nodes := map[int][]event.Event{
		4: {{TimeNS: start.Add(2 * time.Second).UnixNano(), Server: 4, Kind: event.Leading}},
		5: {{TimeNS: start.Add(-time.Second).UnixNano(), Server: 5, Kind: event.Started}},
	}
	harness := []Record{Harness(0, event.LoadStart, 0, nil), Fault(nemesis.Executed{Fault: nemesis.Fault{At: 1500 * time.Millisecond, Kind: nemesis.Crash, Server: 5}, Issued: 1500 * time.Millisecond})}
	tl := Timeline(start, harness, nodes)
	var got []string
	for _, r := range tl {
		got = append(got, string(r.Kind)+"@"+time.Duration(r.AtMS*1e6).String())
	}
	if want := "STARTED@-1s LOAD_START@0s KILL@1.5s LEADING@2s"; strings.Join(got, " ") != want {
		t.Fatalf("timeline %s, want %s", strings.Join(got, " "), want)
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := WriteEvents(path, tl); err != nil {
		t.Fatal(err)
	}
	back, err := ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tl) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, tl)
	}
	if back[2].Fault != nemesis.Crash || back[2].Source != SourceHarness {
		t.Errorf("the crash lost its kind: %+v", back[2])
	}
}
