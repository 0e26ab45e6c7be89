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

func TestTally(t *testing.T) {
	now := time.Unix(0, 0)
	tl := newTally(4, func() time.Time { return now })
	if _, ok := tl.ETA(); ok {
		t.Fatal("an ETA before anything finished")
	}
	if got := ETAString(0, false, "run"); got != "ETA after the first run" {
		t.Errorf("unknown ETA reads %q", got)
	}
	now = now.Add(10 * time.Second)
	tl.Finish()
	if eta, ok := tl.ETA(); !ok || eta != 30*time.Second {
		t.Errorf("1 of 4 done in 10 s: ETA %v %v, want 30s", eta, ok)
	}
	now = now.Add(10 * time.Second)
	tl.Finish()
	if pace, ok := tl.Pace(); !ok || pace != 10*time.Second {
		t.Errorf("2 done in 20 s: pace %v, want 10s", pace)
	}
	if eta, ok := tl.ETA(); !ok || ETAString(eta, ok, "run") != "ETA 20s" {
		t.Errorf("2 of 4 done in 20 s: %s, want ETA 20s", ETAString(eta, ok, "run"))
	}
	if d, n := tl.Counts(); d != 2 || n != 4 {
		t.Errorf("counts %d of %d", d, n)
	}
}
