package pool

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestOrdered: outcomes come in the order of n whatever order the jobs end in,
// no more than workers run at once, and none starts once ctx is cancelled.
func TestOrdered(t *testing.T) {
	for _, c := range []struct {
		n, workers, cancelAfter int // cancelAfter: cancel when that job ends (0: never)
		minDone, maxDone        int // how many are handed on: 1…k for k in [minDone, maxDone]
	}{
		{n: 5, workers: 1, minDone: 5, maxDone: 5},
		{n: 5, workers: 2, minDone: 5, maxDone: 5},
		{n: 3, workers: 8, minDone: 3, maxDone: 3},
		{n: 5, workers: 1, cancelAfter: 2, minDone: 2, maxDone: 2},
		// 2 runs beside 1, and 3 may start if 2 ends first; 4 never starts.
		{n: 6, workers: 2, cancelAfter: 1, minDone: 2, maxDone: 3},
	} {
		t.Run(fmt.Sprintf("n%d-w%d-c%d", c.n, c.workers, c.cancelAfter), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var running, most atomic.Int32
			started := make([]atomic.Bool, c.n+1)
			second := make(chan struct{})
			var done []int
			Ordered(ctx, c.n, c.workers, func(i int) error {
				n := i + 1
				started[n].Store(true)
				if n == 2 {
					close(second)
				}
				if n == 1 && c.workers > 1 {
					select { // with workers to spare, 2 starts while 1 runs
					case <-second:
					case <-time.After(10 * time.Second):
						t.Error("job 2 did not start while 1 ran")
					}
				}
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				// Later jobs end first: the order must come from Ordered.
				time.Sleep(time.Duration(c.n-n+1) * 5 * time.Millisecond)
				running.Add(-1)
				if n == c.cancelAfter {
					cancel()
				}
				return fmt.Errorf("job %d", n)
			}, func(i int, err error) {
				if want := fmt.Sprintf("job %d", i+1); err == nil || err.Error() != want {
					t.Errorf("job %d handed on %v, want %s", i+1, err, want)
				}
				done = append(done, i+1)
			})
			k := len(done)
			if k < c.minDone || k > c.maxDone || !slices.Equal(done, seq(k)) {
				t.Errorf("handed on %v, want 1…k for k in [%d, %d]", done, c.minDone, c.maxDone)
			}
			if m := int(most.Load()); m > c.workers {
				t.Errorf("%d ran at once with %d workers", m, c.workers)
			}
			for n := range started {
				if started[n].Load() && !slices.Contains(done, n) {
					t.Errorf("job %d started after the cancel", n)
				}
			}
		})
	}
}

func seq(k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

func TestMemAvailable(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"MemTotal:       24684544 kB\nMemFree:        23142400 kB\nMemAvailable:   24071168 kB\n", 24071168 << 10, true},
		{"MemTotal: 1 kB\n", 0, false},                // kernels before 3.14
		{"MemAvailable: lots kB\n", 0, false},         // not a number
		{"MemAvailable:   2048 MB\n", 0, false},       // not the unit the kernel writes
		{"MemAvailable:   2048 kB", 2048 << 10, true}, // no final newline
	} {
		got, ok := memAvailable(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("memAvailable(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		perJob uint64
		limit  int
		want   int
	}{
		{1 << 62, 0, 1}, // 4 EiB each
		{1, 0, procs},
		{0, 0, procs},
		{0, 1, 1},
		{0, procs + 3, procs},
		{1 << 62, 5, 1},
	} {
		if w := Workers(c.perJob, c.limit); w != c.want {
			t.Errorf("Workers(%d, %d) = %d, want %d", c.perJob, c.limit, w, c.want)
		}
	}
}
