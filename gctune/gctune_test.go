package gctune

import (
	"math"
	"runtime/debug"
	"testing"
)

// Rare sets GOGC and a memory limit while held, however holders overlap, restores
// both after the last release, and leaves them alone when the environment sets either.
func TestRare(t *testing.T) {
	for _, tc := range []struct {
		name, gogc, limit string
		wantGC            int
	}{
		{"environment silent", "", "", Percent},
		{"GOGC set", "100", "", 100},
		{"GOMEMLIMIT set", "", "1GiB", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.limit)
			defer debug.SetGCPercent(debug.SetGCPercent(100))
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
			a, b := Rare(), Rare()
			gc := debug.SetGCPercent(-1) // reading it sets it: put it back
			debug.SetGCPercent(gc)
			if gc != tc.wantGC {
				t.Errorf("GOGC %d while held, want %d", gc, tc.wantGC)
			}
			if l := debug.SetMemoryLimit(-1); (l != math.MaxInt64) != (tc.wantGC == Percent) {
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
