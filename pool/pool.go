// Package pool runs numbered jobs on a few goroutines and hands their outcomes on in
// order. Simulated runs share nothing, so they can take every core, while whoever
// reads the outcomes (the CLI's table, a campaign's resume markers) sees them as if
// they had run one after another.
package pool

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Ordered runs job(0) … job(n-1), up to workers of them at once, and calls done with
// each outcome in the order of i, from the calling goroutine. Once ctx is cancelled
// no job starts; those running see ctx themselves and are still handed on.
func Ordered[T any](ctx context.Context, n, workers int, job func(i int) T, done func(i int, out T)) {
	outs := make([]chan T, n)
	for i := range outs {
		outs[i] = make(chan T, 1)
	}
	slots := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for i := range n {
			slots <- struct{}{}
			if ctx.Err() != nil {
				for _, ch := range outs[i:] {
					close(ch) // never started
				}
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] <- job(i)
				<-slots
			}()
		}
	}()
	for i, ch := range outs {
		out, ok := <-ch
		if !ok {
			return
		}
		done(i, out)
	}
}

// Workers is how many jobs that each hold up to perJob bytes (0: no matter) can run
// at once here: one per core, as many as the memory the kernel says is available
// holds, no more than limit if limit > 0, and at least one. A 64-core machine with
// 16 GiB should not start 64 simulations of 1 GiB each.
func Workers(perJob uint64, limit int) int {
	n := runtime.GOMAXPROCS(0)
	if limit > 0 {
		n = min(n, limit)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil && perJob > 0 {
		if avail, ok := memAvailable(string(b)); ok {
			n = min(n, int(avail/perJob))
		}
	}
	return max(n, 1)
}

// memAvailable reads MemAvailable (in kB) from the text of /proc/meminfo.
func memAvailable(meminfo string) (uint64, bool) {
	for line := range strings.Lines(meminfo) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "MemAvailable:" && f[2] == "kB" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
