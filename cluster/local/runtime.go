package local

import (
	"bufio"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
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
// The replicas share one heap too, with the harness's records: a GC cycle marks all of
// it, on every replica at once, and shows as a burst of slow writes in every DC. So while
// a local cluster runs the collector runs rarely (GOGC 400), under a soft memory limit of
// half the machine's memory; GOGC or GOMEMLIMIT set in the environment are left alone.
// docs/host.md has the runs that decided it.
var localProcs struct {
	sync.Mutex
	users, saved, cur int
	tune              bool
	gc                bool  // GOGC and the memory limit were set, to restore
	savedGC           int   // the GC percent before
	savedLimit        int64 // the memory limit before
}

// localGOGC is the GC percent while a local cluster runs.
const localGOGC = 400

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
		r.gc = os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == ""
		if r.gc {
			r.savedGC = debug.SetGCPercent(localGOGC)
			r.savedLimit = debug.SetMemoryLimit(halfTheMemory())
		}
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
			if r.users == 0 && r.gc {
				debug.SetGCPercent(r.savedGC)
				debug.SetMemoryLimit(r.savedLimit)
			}
		})
	}
}

// halfTheMemory is half of MemTotal, bytes; no limit where /proc/meminfo says nothing.
func halfTheMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return math.MaxInt64
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil && kb > 0 {
				return kb * 1024 / 2
			}
		}
	}
	return math.MaxInt64
}
