package local

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/polebench/polebench/gctune"
)

// A local cluster gives the process its replicas' Ps while it runs, however clusters
// overlap, and gives them back when the last one closes.
func TestTuneProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // set, the local backend would leave it alone
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	base := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(100)
	defer debug.SetGCPercent(gc)
	check := func(when string, want int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", when, got, want)
		}
	}
	three := tuneProcs(3)
	check("3 replicas", 3*base)
	if p := debug.SetGCPercent(-1); p != gctune.Percent { // reading it sets it: put it back below
		t.Errorf("GOGC %d while a local cluster runs, want %d", p, gctune.Percent)
	}
	debug.SetGCPercent(gctune.Percent)
	if l := debug.SetMemoryLimit(-1); l == math.MaxInt64 || l <= 0 {
		t.Errorf("memory limit %d while a local cluster runs, want half the memory", l)
	}
	five := tuneProcs(5)
	check("5 replicas beside 3", 5*base)
	five()
	five() // a second Close changes nothing
	check("one cluster still runs", 5*base)
	three()
	check("no cluster runs", base)
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC %d once no cluster runs, want the 100 from before", p)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("memory limit %d once no cluster runs, want none", l)
	}
}
