package workload

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/workload/arrival"
)

func TestConstantScheduleIsExact(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want []time.Duration
	}{
		{1000, []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}},
		{3, []time.Duration{0, 333333333, 666666667, time.Second}},
		{0.5, []time.Duration{0, 2 * time.Second, 4 * time.Second}},
	} {
		s, err := NewSchedule(arrival.Constant, tc.rate, 42)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range tc.want {
			if got := s.Next(); got != want {
				t.Errorf("rate %v: offset %d = %v, want %v", tc.rate, i, got, want)
			}
		}
	}
	// No drift after many steps: the millionth offset is exactly 1000 s at 1000 req/s.
	s, _ := NewSchedule(arrival.Constant, 1000, 0)
	var last time.Duration
	for range 1_000_001 {
		last = s.Next()
	}
	if last != 1000*time.Second {
		t.Errorf("offset 1e6 at 1000 req/s = %v, want 1000s", last)
	}
}

func TestScheduleReproducibleFromSeed(t *testing.T) {
	a, err := Offsets(arrival.Poisson, 500, 7, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Offsets(arrival.Poisson, 500, 7, 10*time.Second)
	c, _ := Offsets(arrival.Poisson, 500, 8, 10*time.Second)
	if !slices.Equal(a, b) {
		t.Error("same seed and rate gave different schedules")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same schedule")
	}
	if !slices.IsSorted(a) || a[0] <= 0 || a[len(a)-1] >= 10*time.Second {
		t.Errorf("schedule not increasing within (0, 10s): first %v last %v", a[0], a[len(a)-1])
	}
	// The DC streams are independent: the arrival seed of a DC differs per stream and DC.
	seeds := map[uint64]bool{}
	for _, dc := range []string{"D1", "D2", "D3"} {
		for _, st := range []uint64{streamArrival, streamKey, streamPick} {
			seeds[dcSeed(1, dc, st)] = true
		}
	}
	if len(seeds) != 9 {
		t.Errorf("dcSeed collisions: %d distinct of 9", len(seeds))
	}
}

func TestPoissonMeanRateAndSpread(t *testing.T) {
	const rate, n = 1000.0, 200_000
	s, _ := NewSchedule(arrival.Poisson, rate, 2011)
	var sum, sumsq float64
	prev := time.Duration(0)
	for range n {
		at := s.Next()
		gap := (at - prev).Seconds()
		prev = at
		sum += gap
		sumsq += gap * gap
	}
	mean := sum / n
	sd := math.Sqrt(sumsq/n - mean*mean)
	// Exponential gaps: mean and sd both 1/rate. The standard error of the mean over
	// 200k draws is 0.22 %, so 1 % is over four of them.
	if math.Abs(mean*rate-1) > 0.01 {
		t.Errorf("mean gap %.6fs, want %.6fs ±1%%", mean, 1/rate)
	}
	if math.Abs(sd*rate-1) > 0.02 {
		t.Errorf("gap sd %.6fs, want %.6fs ±2%% (exponential)", sd, 1/rate)
	}
}

func TestNewScheduleRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		a    arrival.Kind
		rate float64
	}{
		{arrival.Poisson, 0}, {arrival.Poisson, -1}, {arrival.Constant, math.NaN()}, {arrival.Constant, math.Inf(1)}, {"bursty", 10},
	} {
		if _, err := NewSchedule(tc.a, tc.rate, 1); err == nil {
			t.Errorf("NewSchedule(%q, %v) succeeded", tc.a, tc.rate)
		}
	}
}
