package gctune

import (
	"math"
	"runtime/debug"
	"testing"
)

// Rare sets GOGC and a memory limit while held, however holders overlap, restores
// both after the last release, and leaves them alone when the environment sets either.
func TestRare(t *testing.T) {
	type env struct{ gogc, limit string }
	wantGC := map[env]int{{"", ""}: Percent, {"100", ""}: 100, {"", "1GiB"}: 100}
	for e, want := range wantGC {
		t.Run("GOGC="+e.gogc+" GOMEMLIMIT="+e.limit, func(t *testing.T) {
			t.Setenv("GOGC", e.gogc)
			t.Setenv("GOMEMLIMIT", e.limit)
			defer debug.SetGCPercent(debug.SetGCPercent(100))
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
			a, b := Rare(), Rare()
			gc := debug.SetGCPercent(-1) // reading it sets it: put it back
			debug.SetGCPercent(gc)
			if gc != want {
				t.Errorf("GOGC %d while held, want %d", gc, want)
			}
			if l := debug.SetMemoryLimit(-1); (l != math.MaxInt64) != (want == Percent) {
				t.Errorf("memory limit %d while held", l)
			}
			a()
			a() // a second release changes nothing
			b()
			if gc := debug.SetGCPercent(100); gc != 100 {
				t.Errorf("GOGC %d after the last release, want the 100 from before", gc)
			}
			if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
				t.Errorf("memory limit %d after the last release, want none", l)
			}
		})
	}
}
