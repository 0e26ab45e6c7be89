package hiccup

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSamplePeriod is how often a HostSampler reads the host.
const DefaultSamplePeriod = 100 * time.Millisecond

// HostSample is what the host did over one period ending at At: how busy its CPUs were,
// how long some runnable task waited for one (Linux's pressure stall information, where
// the kernel has it), and how long this process's garbage collector stopped the world.
type HostSample struct {
	At          int64   // Unix nanoseconds, the end of the period
	PeriodMS    float64 // length of the period
	CPUBusyPct  float64 // of all CPUs, from /proc/stat; NaN unread
	CPUSomePct  float64 // share of the period some task waited for a CPU, /proc/pressure/cpu; NaN without
	GCPauseMS   float64 // this process's stop-the-world pauses in the period
	ProcWaitPct map[string]float64
}

// HostSampler samples the host every period until its context ends. Watch adds
// processes measured from outside (a JVM): the share of the period their threads
// waited in the run queue, from /proc/PID/schedstat.
type HostSampler struct {
	period time.Duration

	mu      sync.Mutex
	samples []HostSample
	watch   map[string]int // name -> pid
}

// NewHostSampler returns a sampler reading the host every period (zero: the default).
func NewHostSampler(period time.Duration) *HostSampler {
	if period <= 0 {
		period = DefaultSamplePeriod
	}
	return &HostSampler{period: period, watch: map[string]int{}}
}

// Watch measures process pid, under name, from the next sample on.
func (h *HostSampler) Watch(name string, pid int) {
	h.mu.Lock()
	h.watch[name] = pid
	h.mu.Unlock()
}

// Samples returns the samples so far.
func (h *HostSampler) Samples() []HostSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HostSample(nil), h.samples...)
}

// hostReading is the cumulative counters one sample differences.
type hostReading struct {
	at         time.Time
	busy, all  uint64  // /proc/stat jiffies
	someUS     float64 // /proc/pressure/cpu some total, µs; NaN without
	gcPauseSec float64
	procWait   map[string]float64 // ns waited in the run queue, per watched process
}

// Run samples until ctx ends.
func (h *HostSampler) Run(ctx context.Context) {
	t := time.NewTicker(h.period)
	defer t.Stop()
	prev := h.read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cur := h.read()
			s := diff(prev, cur)
			h.mu.Lock()
			h.samples = append(h.samples, s)
			h.mu.Unlock()
			prev = cur
		}
	}
}

func diff(a, b hostReading) HostSample {
	el := b.at.Sub(a.at)
	s := HostSample{At: b.at.UnixNano(), PeriodMS: float64(el) / 1e6, CPUBusyPct: nan(), CPUSomePct: nan(),
		GCPauseMS: (b.gcPauseSec - a.gcPauseSec) * 1e3}
	if b.all > a.all {
		s.CPUBusyPct = 100 * float64(b.busy-a.busy) / float64(b.all-a.all)
	}
	if el > 0 && a.someUS == a.someUS && b.someUS == b.someUS {
		s.CPUSomePct = 100 * (b.someUS - a.someUS) * 1e3 / float64(el)
	}
	for name, w := range b.procWait {
		if w0, ok := a.procWait[name]; ok && el > 0 {
			if s.ProcWaitPct == nil {
				s.ProcWaitPct = map[string]float64{}
			}
			s.ProcWaitPct[name] = 100 * (w - w0) / float64(el)
		}
	}
	return s
}

func nan() float64 { return math.NaN() }

// read takes the cumulative counters now. What the host does not have stays NaN or 0:
// the sample then says nothing of it rather than something wrong.
func (h *HostSampler) read() hostReading {
	r := hostReading{at: time.Now(), someUS: nan()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		r.busy, r.all = parseStat(b)
	}
	if b, err := os.ReadFile("/proc/pressure/cpu"); err == nil {
		r.someUS = parsePressure(b)
	}
	r.gcPauseSec = gcPauses()
	h.mu.Lock()
	watch := make(map[string]int, len(h.watch))
	for k, v := range h.watch {
		watch[k] = v
	}
	h.mu.Unlock()
	for name, pid := range watch {
		if w, ok := runQueueWait(pid); ok {
			if r.procWait == nil {
				r.procWait = map[string]float64{}
			}
			r.procWait[name] = w
		}
	}
	return r
}

// parseStat reads /proc/stat's first line: busy and total jiffies of all CPUs (idle
// and iowait are not busy).
func parseStat(b []byte) (busy, all uint64) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0
		}
		if i >= 7 { // guest and guest_nice are already counted in user and nice
			break
		}
		all += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, all
}

// parsePressure reads the "some" line's total (µs) of /proc/pressure/cpu.
func parsePressure(b []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				if n, err := strconv.ParseFloat(v, 64); err == nil {
					return n
				}
			}
		}
	}
	return nan()
}

// runQueueWait is how long process pid's threads have waited for a CPU, ns, summed
// over /proc/PID/task/*/schedstat (the second field).
func runQueueWait(pid int) (float64, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var sum float64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if w, err := strconv.ParseFloat(f[1], 64); err == nil {
				sum += w
			}
		}
	}
	return sum, true
}

var gcSample = []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}}

// gcPauses is the total of this process's stop-the-world GC pauses so far, seconds,
// from the runtime's histogram (each bucket counted at its lower bound).
func gcPauses() float64 {
	metrics.Read(gcSample)
	if gcSample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := gcSample[0].Value.Float64Histogram()
	var sum float64
	for i, c := range h.Counts {
		if lo := h.Buckets[i]; c > 0 && !math.IsInf(lo, -1) {
			sum += float64(c) * lo
		}
	}
	return sum
}
