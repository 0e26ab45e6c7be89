package cluster

import (
	"os"
	"runtime"
	"sync"
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
// The GC was tried too (GOGC at 100 per replica, under a memory limit): it spared a
// 100 MB resync its one GC cycle, but the larger heap touched fresh memory instead of
// reusing it, and in TestOutdatedLeaderRecovery the restarted replica took 460 ms
// instead of 130-230 ms to load its 20 MB state.
var localProcs struct {
	sync.Mutex
	users, saved, cur int
	tune              bool
}

// tuneProcs gives the process the Ps of that many replicas until release is called;
// overlapping clusters get the largest number, the last release restores it.
func tuneProcs(replicas int) (release func()) {
	r := &localProcs
	r.Lock()
	defer r.Unlock()
	if r.users == 0 {
		r.tune = os.Getenv("GOMAXPROCS") == ""
		r.saved = runtime.GOMAXPROCS(0)
		r.cur = r.saved
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
			if r.users--; r.users == 0 && r.tune {
				runtime.GOMAXPROCS(r.saved)
			}
		})
	}
}
