package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// fakeClock jumps to each instant waited for: the schedule plays in no time.
type fakeClock struct{ now time.Duration }

func (c *fakeClock) Now() time.Duration { return c.now }
func (c *fakeClock) WaitUntil(ctx context.Context, at time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now = max(c.now, at)
	return nil
}

// recorder is a target that logs what it was asked, on the clock, and fails restarts
// of server 9.
type recorder struct {
	clock *fakeClock
	log   []string
}

func (r *recorder) Kill(_ context.Context, id int) error {
	r.log = append(r.log, fmt.Sprintf("%v kill p%d", r.clock.now, id))
	return nil
}

func (r *recorder) Restart(_ context.Context, id int) error {
	r.log = append(r.log, fmt.Sprintf("%v restart p%d", r.clock.now, id))
	if id == 9 {
		return errors.New("no such server")
	}
	return nil
}

func TestPlay(t *testing.T) {
	faults := []Fault{
		{At: 10 * time.Second, Kind: Kill, Server: 1, Source: "outdate[0].kill_at"},
		{At: 58 * time.Second, Kind: Restart, Server: 1, Source: "outdate[0].restart_at"},
		{At: 60 * time.Second, Kind: Crash, Server: 5, Source: "crash_at"},
		{At: 70 * time.Second, Kind: Restart, Server: 9, Source: "faults[0].restart"},
	}
	clock := &fakeClock{}
	target := &recorder{clock: clock}
	var before, after []string
	done := Play(t.Context(), clock, target, faults, Observer{
		Before: func(_ context.Context, f Fault) { before = append(before, f.String()) },
		After: func(_ context.Context, e Executed) {
			after = append(after, fmt.Sprintf("%s err=%v", e.Kind, e.Err != nil))
		},
	})
	wantLog := []string{"10s kill p1", "58s restart p1", "1m0s kill p5", "1m10s restart p9"}
	if !slices.Equal(target.log, wantLog) {
		t.Errorf("target saw %q, want %q", target.log, wantLog)
	}
	if want := []string{"kill p1 at 10s", "restart p1 at 58s", "crash p5 at 1m0s", "restart p9 at 1m10s"}; !slices.Equal(before, want) {
		t.Errorf("before %q, want %q", before, want)
	}
	if want := []string{"kill err=false", "restart err=false", "crash err=false", "restart err=true"}; !slices.Equal(after, want) {
		t.Errorf("after %q, want %q", after, want)
	}
	if len(done) != 4 || done[2].Issued != 60*time.Second || done[2].Source != "crash_at" {
		t.Fatalf("executed %+v", done)
	}
	if at, ok := CrashAt(done); !ok || at != 60*time.Second {
		t.Errorf("CrashAt = %v, %v", at, ok)
	}
}

func TestPlayStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	clock := &fakeClock{}
	target := &recorder{clock: clock}
	faults := []Fault{{At: time.Second, Kind: Kill, Server: 1}, {At: 2 * time.Second, Kind: Crash, Server: 5}}
	done := Play(ctx, clock, target, faults, Observer{After: func(context.Context, Executed) { cancel() }})
	if len(done) != 1 || len(target.log) != 1 {
		t.Fatalf("played %d faults (%q) after the context ended", len(done), target.log)
	}
	if _, ok := CrashAt(done); ok {
		t.Error("a crash that never happened is reported")
	}
}

func TestWallClock(t *testing.T) {
	w := Wall{Start: time.Now()}
	if err := w.WaitUntil(t.Context(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if now := w.Now(); now < 20*time.Millisecond {
		t.Fatalf("woke at %v, before 20ms", now)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := w.WaitUntil(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a cancelled context: %v", err)
	}
}
