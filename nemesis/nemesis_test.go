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

// lacks is the part of a target that carries nothing beyond kill and restart.
type lacks struct{}

func (lacks) SetLinks(context.Context, [][2]int, bool, bool) error { return Unsupported{Partition} }
func (lacks) CutOneWay(context.Context, [][2]int, bool) error      { return Unsupported{OneWay} }
func (lacks) Pause(context.Context, int) error                     { return Unsupported{Pause} }
func (lacks) Resume(context.Context, int) error                    { return Unsupported{Resume} }
func (lacks) KillLosing(context.Context, int, bool) error          { return Unsupported{LoseUnsynced} }
func (lacks) SlowDisk(context.Context, int, time.Duration) error   { return Unsupported{SlowDisk} }
func (lacks) Leader(context.Context) (int, error)                  { return 0, Unsupported{IsolateLeader} }
func (lacks) ServerIDs() []int                                     { return nil }

// recorder is a target that logs what it was asked, on the clock, and fails restarts
// of server 9.
type recorder struct {
	lacks
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

// linkRecorder is a recorder that can cut links.
type linkRecorder struct{ recorder }

func (r *linkRecorder) SetLinks(_ context.Context, pairs [][2]int, cut, only bool) error {
	r.log = append(r.log, fmt.Sprintf("%v cut=%v broadcast-only=%v %v", r.clock.now, cut, only, pairs))
	return nil
}

func TestPartitionsAndHeal(t *testing.T) {
	if got := Pairs([][]int{{1, 2}, {5, 3, 4}}); fmt.Sprint(got) != "[[1 5] [1 3] [1 4] [2 5] [2 3] [2 4]]" {
		t.Fatalf("Pairs = %v", got)
	}
	clock := &fakeClock{}
	target := &linkRecorder{recorder{clock: clock}}
	faults := []Fault{
		{At: 1 * time.Second, Kind: Outdate, Server: 1, Pairs: [][2]int{{1, 2}, {1, 3}}, BroadcastOnly: true},
		{At: 2 * time.Second, Kind: Partition, Pairs: Pairs([][]int{{1, 2}, {3}})},
		{At: 3 * time.Second, Kind: Rejoin, Server: 1, Pairs: [][2]int{{1, 2}, {1, 3}}, BroadcastOnly: true},
		{At: 4 * time.Second, Kind: Heal},
	}
	done := Play(t.Context(), clock, target, faults, Observer{})
	want := []string{
		"1s cut=true broadcast-only=true [[1 2] [1 3]]",
		"2s cut=true broadcast-only=false [[1 3] [2 3]]",
		"3s cut=false broadcast-only=true [[1 2] [1 3]]",
		// The rejoin restored the outdate's broadcast; the heal restores the partition.
		"4s cut=false broadcast-only=false [[1 3] [2 3]]",
	}
	if !slices.Equal(target.log, want) {
		t.Errorf("links:\n got %q\nwant %q", target.log, want)
	}
	for _, e := range done {
		if e.Err != nil {
			t.Errorf("%v: %v", e.Fault, e.Err)
		}
	}
	// A target that cannot cut links says so, and the schedule goes on.
	plain := &recorder{clock: &fakeClock{}}
	done = Play(t.Context(), plain.clock, plain, []Fault{{At: time.Second, Kind: Isolate, Server: 2, Pairs: [][2]int{{1, 2}}}, {At: 2 * time.Second, Kind: Kill, Server: 3}}, Observer{})
	if len(done) != 2 || done[0].Err == nil || done[1].Err != nil {
		t.Fatalf("executed %+v", done)
	}
}
