package sim

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestWindowsHandOff drives the windows' coordinator and helpers through many
// thousands of windows with every step of the hand-off yielding the processor and
// more goroutines than cores, the interleavings of a preempted helper: every window
// must step every partition exactly once, and a lost count fails within the stall
// bound instead of hanging. (With done reset after next, the order that made runs on
// several workers hang, it fails here within the 5 s stall bound.)
func TestWindowsHandOff(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(8, 4*runtime.NumCPU())))
	for _, c := range []struct{ parts, helpers int }{{2, 1}, {3, 2}, {9, 1}, {9, 8}} {
		windows := 20000
		if testing.Short() || raceEnabled {
			windows = 4000
		}
		w, stepped := handOff(c.parts, c.helpers)
		for n := range windows {
			w.n, w.end = uint64(n+1), int64(n)
			if err := w.step(); err != nil {
				w.close()
				t.Fatalf("%d partitions, %d helpers: %v", c.parts, c.helpers, err)
			}
			for i, k := range stepped {
				if *k != n+1 {
					w.close()
					t.Fatalf("%d partitions, %d helpers: window %d stepped partition %d %d times in all", c.parts, c.helpers, n+1, i, *k)
				}
			}
		}
		w.close()
	}
}

// handOff is a windowed run of parts partitions, each with an event at every instant
// that counts its steps, and helpers goroutines besides the caller.
func handOff(parts, helpers int) (*windows, []*int) {
	w := &windows{root: &Sim{}, lookahead: 1, helpers: helpers, stall: 5 * time.Second, yields: true}
	var stepped []*int
	for range parts {
		p, k := &Sim{}, new(int)
		var tick func()
		tick = func() {
			*k++
			p.queue.push(simEvent{at: p.now + 1, pushed: p.now, fn: tick})
		}
		p.queue.push(simEvent{fn: tick})
		w.ps, stepped = append(w.ps, p), append(stepped, k)
	}
	for range helpers {
		go w.help()
	}
	return w, stepped
}

// TestWatchdog: a window whose hand-off loses a count, and an instant whose events
// schedule each other forever, end the run with an error that says where it stood.
func TestWatchdog(t *testing.T) {
	t.Run("window", func(t *testing.T) {
		cfg := config(t, "two-dc", 3*time.Second, 0, 1)
		cfg.Workers, cfg.Stall, cfg.loseWindow = 2, 300*time.Millisecond, 50
		_, err := Run(context.Background(), cfg)
		if err == nil {
			t.Fatal("a run whose window lost a count ended without an error")
		}
		t.Log(err)
		for _, want := range []string{"window 50 ", "made no progress", "done 1 of 2 partitions", "partition 0 at", "partition 1 at"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error lacks %q: %v", want, err)
			}
		}
	})
	t.Run("instant", func(t *testing.T) {
		cfg := config(t, "two-dc", 2*time.Second, 0, 1)
		cfg.Stall = 300 * time.Millisecond
		cfg.beforeFinish = func(s *Sim) {
			var again func()
			again = func() { s.at(root, s.now, again) }
			s.at(root, s.now, again)
			s.runUntil(context.Background(), s.now+1)
		}
		_, err := Run(context.Background(), cfg)
		if !errors.Is(err, errStall) || !strings.Contains(err.Error(), "events at ") {
			t.Fatalf("a run stuck at one instant: %v", err)
		}
		t.Log(err)
	})
}
