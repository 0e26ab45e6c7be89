package netem

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Now, read through Go's clock, stays within a few microseconds of clock_gettime
// itself, the clock other processes and containers read.
func TestNowIsClockMonotonic(t *testing.T) {
	for range 1000 {
		var ts unix.Timespec
		before := Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		after := Now()
		// A reading between two of Now's, with a margin for the pairing error.
		if raw := ts.Nano(); raw < before-2000 || raw > after+2000 {
			t.Fatalf("clock_gettime %d outside Now's [%d, %d] by more than 2 µs", raw, before, after)
		}
	}
}

func TestAtIsExact(t *testing.T) {
	t1 := time.Now()
	t2 := t1.Add(1500 * time.Microsecond)
	if d := At(t2) - At(t1); d != 1500000 {
		t.Fatalf("At(t+1.5ms) - At(t) = %d ns, want 1500000", d)
	}
	if now, at := Now(), At(time.Now()); at < now {
		t.Fatalf("At(time.Now()) %d before an earlier Now %d", at, now)
	}
}
