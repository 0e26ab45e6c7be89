package local

import (
	"os"
	"runtime"
	"sync"

	"github.com/polebench/polebench/gctune"
)

// The local backend runs every replica in this process, where they share the Go
// scheduler's Ps. One replica's CPU-bound work (a snapshot streamed to a follower, or
// loaded by one) then holds Ps that the other replicas' goroutines wait for, in FIFO
// run queues, for up to the scheduler's 10 ms time slice at each hop of a request:
// separate processes never wait that way, since the kernel lets a thread that wakes
// run before a CPU hog. So while a local cluster runs, the process has as many Ps as
// its replicas would have had together (each the machine's): a goroutine that becomes
// runnable finds an idle P and its own thread, and the kernel schedules the replicas'
// threads as it would schedule their processes'. The nightly suite's recovery entry
// measures the difference. A GOMAXPROCS set in the environment is left alone.
//
// The replicas share one heap too, with the harness's records: a GC cycle marks all of
// it, on every replica at once, and shows as a burst of slow writes in every DC. So while
// a local cluster runs the collector runs rarely (gctune.Rare). docs/host.md has the
// runs that decided it.
var localProcs struct {
	sync.Mutex
	users, saved, cur int
	tune              bool
	gc                func() // gctune.Rare's release
}

// tuneProcs gives the process the Ps of that many replicas, and the rarer GC, until
// release is called; overlapping clusters get the largest number, the last release
// restores both.
func tuneProcs(replicas int) (release func()) {
	r := &localProcs
	r.Lock()
	defer r.Unlock()
	if r.users == 0 {
		r.tune = os.Getenv("GOMAXPROCS") == ""
		r.saved = runtime.GOMAXPROCS(0)
		r.cur = r.saved
		r.gc = gctune.Rare()
	}
	r.users++
	if n := replicas * r.saved; r.tune && n > r.cur {
		r.cur = n
		runtime.GOMAXPROCS(n)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			r.Lock()
			defer r.Unlock()
			if r.users--; r.users == 0 {
				if r.tune {
					runtime.GOMAXPROCS(r.saved)
				}
				r.gc()
			}
		})
	}
}
