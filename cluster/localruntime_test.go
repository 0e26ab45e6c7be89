package cluster

import (
	"runtime"
	"testing"
)

// A local cluster gives the process its replicas' Ps while it runs, however clusters
// overlap, and gives them back when the last one closes.
func TestTuneProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // set, the local backend would leave it alone
	base := runtime.GOMAXPROCS(0)
	check := func(when string, want int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", when, got, want)
		}
	}
	three := tuneProcs(3)
	check("3 replicas", 3*base)
	five := tuneProcs(5)
	check("5 replicas beside 3", 5*base)
	five()
	five() // a second Close changes nothing
	check("one cluster still runs", 5*base)
	three()
	check("no cluster runs", base)
}
