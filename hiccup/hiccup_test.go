package hiccup

import (
	"context"
	"math"
	"os/exec"
	"runtime"
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
	zk := func(pid int, threads map[int]uint64) map[string]procWait {
		return map[string]procWait{"zk1": {pid: pid, threads: threads}}
	}
	a := hostReading{at: t0, busy: 100, all: 1000, someUS: 1000, gcPauseSec: 1, gcCPUSec: 3, procWait: zk(7, map[int]uint64{7: 0, 8: 5e6})}
	// Thread 8 exited (its 5 ms are not taken from the others), 9 was born with 4 ms.
	b := hostReading{at: t0.Add(100 * time.Millisecond), busy: 150, all: 1100, someUS: 21000, gcPauseSec: 1.002, gcCPUSec: 3.015,
		procWait: zk(7, map[int]uint64{7: 6e6, 9: 4e6}), links: &LateSummary{N: 10, P99: 2 * time.Millisecond, Max: 3 * time.Millisecond}}
	s := diff(a, b)
	if s.CPUBusyPct != 50 || math.Abs(s.CPUSomePct-20) > 1e-9 || math.Abs(s.GCPauseMS-2) > 1e-9 || math.Abs(s.GCCPUMS-15) > 1e-9 || math.Abs(s.ProcWaitPct["zk1"]-10) > 1e-9 {
		t.Errorf("sample %+v", s)
	}
	if s.LinkMsgs != 10 || s.LinkLateP99MS != 2 || s.LinkLateMaxMS != 3 {
		t.Errorf("links: %d messages, p99 %v ms, max %v ms; want 10, 2, 3", s.LinkMsgs, s.LinkLateP99MS, s.LinkLateMaxMS)
	}
	a.someUS, b.someUS = math.NaN(), math.NaN()
	if s := diff(a, b); !math.IsNaN(s.CPUSomePct) {
		t.Errorf("pressure without PSI: %v, want NaN", s.CPUSomePct)
	}
	// A restarted process under the same name: the period spans two processes, so it
	// says nothing of either.
	b.procWait = zk(70, map[int]uint64{70: 1e6})
	b.links = &LateSummary{}
	if s := diff(a, b); s.ProcWaitPct != nil || s.LinkMsgs != 0 || !math.IsNaN(s.LinkLateP99MS) || !math.IsNaN(s.LinkLateMaxMS) {
		t.Errorf("new pid and no message: %+v, want no wait and NaN lateness", s)
	}
}

// A process watched by pid from outside, here a busy loop and a sleeper started by
// the test, gets a sample under its name; one killed or unwatched gets none.
// TestGCReading: the runtime's GC counters grow with a collection.
func TestGCReading(t *testing.T) {
	p0, c0 := gcPauses()
	runtime.GC()
	p1, c1 := gcPauses()
	if !(c1 > c0) || p1 < p0 {
		t.Errorf("after a GC: CPU %v -> %v s, pauses %v -> %v s; want the CPU grown, the pauses not shrunk", c0, c1, p0, p1)
	}
}

func TestWatchChild(t *testing.T) {
	busy := startChild(t, "sh", "-c", "while :; do :; done")
	sleeper := startChild(t, "sleep", "60")
	h := NewHostSampler(20 * time.Millisecond)
	h.Watch("busy", busy.Process.Pid)
	h.Watch("sleeper", sleeper.Process.Pid)
	h.Watch("gone", 1<<30) // above any pid_max: never a process
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	defer func() { cancel(); <-done }()
	has := func(name string) bool {
		for _, s := range h.Samples() {
			if _, ok := s.ProcWaitPct[name]; ok {
				return true
			}
		}
		return false
	}
	waitFor(t, "samples of both children", func() bool { return has("busy") && has("sleeper") })
	if has("gone") {
		t.Error("a sample of a process that does not exist")
	}
	h.Unwatch("busy")
	busy.Process.Kill()
	busy.Wait()
	n := len(h.Samples())
	waitFor(t, "two samples after the unwatch", func() bool { return len(h.Samples()) >= n+2 })
	for _, s := range h.Samples()[n+1:] {
		if _, ok := s.ProcWaitPct["busy"]; ok {
			t.Fatalf("sample %+v of an unwatched process", s)
		}
	}
}

func startChild(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(name, args...)
	if err := c.Start(); err != nil {
		t.Skipf("%s: %v", name, err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// waitFor polls cond up to a generous bound: the test waits for samples, it does not
// time them.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s within 30 s", what)
		}
	}
}

// The sampler takes the links' lateness every period into its samples.
func TestSamplerTakesLinks(t *testing.T) {
	var l Lateness
	l.Record(time.Hour) // before the sampler starts: not the run's
	h := NewHostSampler(10 * time.Millisecond)
	h.Links(&l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	waitFor(t, "a first sample", func() bool { return len(h.Samples()) > 0 })
	for range 99 {
		l.Record(time.Millisecond)
	}
	l.Record(40 * time.Millisecond)
	waitFor(t, "the records sampled", func() bool {
		var n int64
		for _, s := range h.Samples() {
			n += s.LinkMsgs
		}
		return n >= 100
	})
	cancel()
	<-done
	var n int64
	late := 0.0
	for _, s := range h.Samples() {
		n += s.LinkMsgs
		if s.LinkMsgs > 0 {
			late = max(late, s.LinkLateMaxMS)
		} else if !math.IsNaN(s.LinkLateMaxMS) || !math.IsNaN(s.LinkLateP99MS) {
			t.Errorf("a period without messages has lateness %+v", s)
		}
	}
	if n != 100 || late != 40 {
		t.Errorf("sampled %d messages, latest %v ms; want 100, 40", n, late)
	}
}

func TestLateBuckets(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 31, 32, 33, 63, 64, 1000, 1 << 20, 1<<40 + 12345, math.MaxInt64} {
		i := lateBucket(v)
		if i < prev || i >= lateBuckets {
			t.Fatalf("bucket of %d is %d (previous %d, %d buckets)", v, i, prev, lateBuckets)
		}
		prev = i
		if up := lateUpper(i); uint64(up) < v || (v >= 2*lateSub && float64(uint64(up)-v) > float64(v)/lateSub) {
			t.Errorf("%d in bucket %d up to %d: not within 1/%d", v, i, up, lateSub)
		}
		if i > 0 && uint64(lateUpper(i-1)) >= v {
			t.Errorf("%d also fits bucket %d (up to %d)", v, i-1, lateUpper(i-1))
		}
	}
}

func TestLatenessTake(t *testing.T) {
	var l Lateness
	if s := l.Take(); s != (LateSummary{}) {
		t.Errorf("empty: %+v", s)
	}
	for i := range 1000 {
		l.Record(time.Duration(i) * time.Microsecond) // 0 .. 999 µs
	}
	l.Record(-time.Millisecond) // early is on time
	s := l.Take()
	if s.N != 1001 || s.Max != 999*time.Microsecond {
		t.Errorf("%d records, max %v; want 1001, 999µs", s.N, s.Max)
	}
	if want := 499500 * time.Microsecond / 1001; s.Mean != want { // the early one counts as 0
		t.Errorf("mean %v, want %v", s.Mean, want)
	}
	if want := 990 * time.Microsecond; s.P99 < want || s.P99 > s.Max {
		t.Errorf("p99 %v, want from %v to the max %v", s.P99, want, s.Max)
	}
	if s := l.Take(); s != (LateSummary{}) {
		t.Errorf("after a take: %+v, want nothing", s)
	}
}

// BenchmarkLatenessRecord is what a user-space link adds to each delivery, besides
// reading the clock.
func BenchmarkLatenessRecord(b *testing.B) {
	var l Lateness
	for i := 0; i < b.N; i++ {
		l.Record(time.Duration(i&0xffff) * time.Nanosecond)
	}
}

func BenchmarkLatenessRecordParallel(b *testing.B) {
	var l Lateness
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Record(time.Duration(i&0xffff) * time.Nanosecond)
			i++
		}
	})
}
