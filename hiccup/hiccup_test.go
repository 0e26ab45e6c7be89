package hiccup

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestMeterRecord(t *testing.T) {
	m := New(time.Millisecond, 2*time.Millisecond)
	for i, late := range []time.Duration{50 * time.Microsecond, 3 * time.Millisecond, -time.Microsecond, 2 * time.Millisecond, time.Millisecond} {
		m.Record(1e9+int64(i)*1e6, late)
	}
	r := m.Report("p1")
	if r.Process != "p1" || r.From != 1e9 || r.To != 1e9+4e6+int64(time.Millisecond) {
		t.Errorf("report %q from %d to %d", r.Process, r.From, r.To)
	}
	want := []Stall{{Start: 1e9 + 1e6, Len: int64(3 * time.Millisecond)}, {Start: 1e9 + 3e6, Len: int64(2 * time.Millisecond)}}
	if len(r.Stalls) != len(want) || r.Stalls[0] != want[0] || r.Stalls[1] != want[1] {
		t.Errorf("stalls %+v, want %+v", r.Stalls, want)
	}
	h := r.Histogram()
	if h.TotalCount() != 5 || h.Max() < int64(3*time.Millisecond)*999/1000 || h.Min() != 0 {
		t.Errorf("histogram: %d wakes, min %d, max %d", h.TotalCount(), h.Min(), h.Max())
	}
}

// TestMeterRun: a running meter records wakes, and its report survives a JSON-able
// export and import of the histogram.
func TestMeterRun(t *testing.T) {
	m := New(0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for m.Report("x").Histogram().TotalCount() < 10 {
		if time.Now().After(deadline) {
			t.Fatal("the meter recorded fewer than 10 wakes in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	r := m.Report("x")
	if r.From == 0 || r.To <= r.From || r.Interval != int64(DefaultInterval) {
		t.Errorf("report %+v", r)
	}
}

func TestParseStat(t *testing.T) {
	busy, all := parseStat([]byte("cpu  100 5 50 800 20 3 2 0 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	if busy != 160 || all != 980 {
		t.Errorf("busy %d all %d, want 160 980", busy, all)
	}
	if b, a := parseStat([]byte("intr 1 2 3")); b != 0 || a != 0 {
		t.Errorf("not a cpu line: %d %d", b, a)
	}
}

func TestParsePressure(t *testing.T) {
	v := parsePressure([]byte("some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	if v != 123456 {
		t.Errorf("some total %v", v)
	}
	if v := parsePressure([]byte("garbage")); !math.IsNaN(v) {
		t.Errorf("garbage: %v, want NaN", v)
	}
}

func TestDiff(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := hostReading{at: t0, busy: 100, all: 1000, someUS: 1000, gcPauseSec: 1, procWait: map[string]float64{"zk1": 0}}
	b := hostReading{at: t0.Add(100 * time.Millisecond), busy: 150, all: 1100, someUS: 21000, gcPauseSec: 1.002, procWait: map[string]float64{"zk1": 10e6}}
	s := diff(a, b)
	if s.CPUBusyPct != 50 || math.Abs(s.CPUSomePct-20) > 1e-9 || math.Abs(s.GCPauseMS-2) > 1e-9 || math.Abs(s.ProcWaitPct["zk1"]-10) > 1e-9 {
		t.Errorf("sample %+v", s)
	}
	a.someUS, b.someUS = math.NaN(), math.NaN()
	if s := diff(a, b); !math.IsNaN(s.CPUSomePct) {
		t.Errorf("pressure without PSI: %v, want NaN", s.CPUSomePct)
	}
}
