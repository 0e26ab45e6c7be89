package logtail

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/polebench/polebench/event"
)

// TestTail: a line written in two pieces is read once, whole; events come back in
// time order, mended by fix; what a line starts runs and may add events.
func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p1.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ran atomic.Int32
	var tl *Tailer
	tl = New(func() []int { return []int{1} }, func(int) string { return path },
		func(id int, line string, n int) (event.Event, func(context.Context), bool) {
			if e, ok := Started(id, line); ok {
				return e, func(context.Context) {
					ran.Add(1)
					tl.Add(event.Event{TimeNS: e.TimeNS - 1, Server: id, Kind: event.Looking})
				}, true
			}
			return event.Event{}, nil, false
		})
	defer tl.Stop()
	var b bytes.Buffer
	if err := MarkStart(&b, 1, 1); err != nil {
		t.Fatal(err)
	}
	line := b.String()
	for _, piece := range []string{"noise\n" + line[:10], line[10:]} {
		if _, err := f.WriteString(piece); err != nil {
			t.Fatal(err)
		}
		tl.Tail()
	}
	tl.Stop() // waits for what the line started
	got := tl.Timeline(1, func(i int, e *event.Event) { e.Reason = strings.Repeat("x", i+1) })
	if ran.Load() != 1 || len(got) != 2 || got[0].Kind != event.Looking || got[1].Kind != event.Started ||
		got[0].Reason != "xx" || got[1].Reason != "x" {
		t.Fatalf("ran %d, timeline %+v", ran.Load(), got)
	}
}
