package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPlainLinesAreRateLimitedAndClean(t *testing.T) {
	var b bytes.Buffer
	l := NewPlain(&b)
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	for i := range 30 { // one update a second for 30 s
		l.Update("step %d", i)
		now = now.Add(time.Second)
	}
	l.Note("finished")
	l.Done()
	got := b.String()
	if strings.ContainsAny(got, "\r\033") {
		t.Fatalf("plain output has control characters: %q", got)
	}
	want := "step 0\nstep 10\nstep 20\nfinished\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestLiveLineRedrawsInPlace(t *testing.T) {
	var b bytes.Buffer
	l := NewPlain(&b)
	l.live = true
	l.Update("a")
	l.Update("b")
	l.Note("kept")
	l.Update("c")
	l.Done()
	want := "\r\033[Ka\r\033[Kb\r\033[Kkept\n\r\033[Kc\n"
	if got := b.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestETA(t *testing.T) {
	for _, c := range []struct {
		done, total float64
		el, want    time.Duration
	}{
		{0, 10, time.Minute, 0},
		{5, 10, time.Minute, time.Minute},
		{1, 4, 10 * time.Second, 30 * time.Second},
		{10, 10, time.Minute, 0},
	} {
		if got := ETA(c.done, c.total, c.el); got != c.want {
			t.Errorf("ETA(%v, %v, %v) = %v, want %v", c.done, c.total, c.el, got, c.want)
		}
	}
}
