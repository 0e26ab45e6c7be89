package hiccup

import (
	"bufio"
	"bytes"
	"context"
	"maps"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultSamplePeriod is how often a HostSampler reads the host.
const DefaultSamplePeriod = 100 * time.Millisecond

// HostSample is what the host did over one period ending at At: how busy its CPUs were,
// how long some runnable task waited for one (Linux's pressure stall information, where
// the kernel has it), how long this process's garbage collector stopped the world, how
// long each watched process's threads waited for a CPU, and how late the user-space
// links delivered against their schedule.
type HostSample struct {
	At         int64   // Unix nanoseconds, the end of the period
	PeriodMS   float64 // length of the period
	CPUBusyPct float64 // of all CPUs, from /proc/stat; NaN unread
	CPUSomePct float64 // share of the period some task waited for a CPU, /proc/pressure/cpu; NaN without
	GCPauseMS  float64 // this process's stop-the-world pauses in the period
	// GCCPUMS is the CPU time this process's garbage collector took in the period
	// (marking, assists, pauses), as the runtime accounts it at the end of each cycle:
	// a cycle's whole cost shows in the period it ended in.
	GCCPUMS float64
	// ProcWaitPct is, per watched process, the time its threads waited in the run
	// queue over the period, summed over threads (two threads waiting all along: 200).
	// A process is missing from a period it was not running through, or that began
	// before it was watched under its current pid.
	ProcWaitPct map[string]float64
	// LinkMsgs is how many messages the links (Links) delivered in the period;
	// LinkLateMeanMS, LinkLateP99MS and LinkLateMaxMS how late they were on average,
	// the 99th percentile and the latest after their scheduled arrival (NaN without
	// links, or without a message).
	LinkMsgs       int64
	LinkLateMeanMS float64
	LinkLateP99MS  float64
	LinkLateMaxMS  float64
}

// HostSampler samples the host every period until its context ends. Watch adds
// processes measured from outside (a JVM): the time their threads waited in the run
// queue, from /proc/PID/task/*/schedstat. Links adds the lateness of the user-space
// links' deliveries.
type HostSampler struct {
	period time.Duration

	mu      sync.Mutex
	samples []HostSample
	watch   map[string]int // name -> pid
	links   *Lateness

	open map[string]*watched // the watched processes' files: Run's alone
}

// NewHostSampler returns a sampler reading the host every period (zero: the default).
func NewHostSampler(period time.Duration) *HostSampler {
	if period <= 0 {
		period = DefaultSamplePeriod
	}
	return &HostSampler{period: period, watch: map[string]int{}}
}

// Watch measures process pid, under name, from the next sample on. Watching a name
// again with another pid (a restarted server) measures the new process from then on.
func (h *HostSampler) Watch(name string, pid int) {
	h.mu.Lock()
	h.watch[name] = pid
	h.mu.Unlock()
}

// Unwatch stops measuring name (a killed server: its pid may be reused).
func (h *HostSampler) Unwatch(name string) {
	h.mu.Lock()
	delete(h.watch, name)
	h.mu.Unlock()
}

// Links samples l, which the sampler takes (and so resets) every period: it must be
// the sampler's alone.
func (h *HostSampler) Links(l *Lateness) {
	h.mu.Lock()
	h.links = l
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
	gcCPUSec   float64
	procWait   map[string]procWait // per watched process
	links      *LateSummary        // taken since the previous reading; nil without links
}

// procWait is one watched process's threads' run-queue wait so far, ns, by thread id.
type procWait struct {
	pid     int
	threads map[int]uint64
}

// Run samples until ctx ends.
func (h *HostSampler) Run(ctx context.Context) {
	t := time.NewTicker(h.period)
	defer t.Stop()
	defer func() {
		for _, w := range h.open {
			w.close()
		}
		h.open = nil
	}()
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
		GCPauseMS: (b.gcPauseSec - a.gcPauseSec) * 1e3, GCCPUMS: (b.gcCPUSec - a.gcCPUSec) * 1e3, LinkLateMeanMS: nan(), LinkLateP99MS: nan(), LinkLateMaxMS: nan()}
	if b.all > a.all {
		s.CPUBusyPct = 100 * float64(b.busy-a.busy) / float64(b.all-a.all)
	}
	if el > 0 && a.someUS == a.someUS && b.someUS == b.someUS {
		s.CPUSomePct = 100 * (b.someUS - a.someUS) * 1e3 / float64(el)
	}
	for name, w := range b.procWait {
		w0, ok := a.procWait[name]
		if !ok || w0.pid != w.pid || el <= 0 {
			continue // the period's start was not read of this process
		}
		if s.ProcWaitPct == nil {
			s.ProcWaitPct = map[string]float64{}
		}
		s.ProcWaitPct[name] = 100 * float64(w.since(w0)) / float64(el)
	}
	if l := b.links; l != nil {
		s.LinkMsgs = l.N
		if l.N > 0 {
			s.LinkLateMeanMS, s.LinkLateP99MS, s.LinkLateMaxMS = float64(l.Mean)/1e6, float64(l.P99)/1e6, float64(l.Max)/1e6
		}
	}
	return s
}

// since is how long w's threads waited between reading w0 and reading w, ns: per
// thread, so that a thread that exited in between takes away none of the others'
// wait (a sum over the threads would drop by its whole total), and a thread that was
// born in between counts all of its own.
func (w procWait) since(w0 procWait) uint64 {
	var sum uint64
	for tid, v := range w.threads {
		if v0, ok := w0.threads[tid]; ok {
			if v >= v0 {
				sum += v - v0
			}
		} else {
			sum += v
		}
	}
	return sum
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
	r.gcPauseSec, r.gcCPUSec = gcPauses()
	h.mu.Lock()
	watch := maps.Clone(h.watch)
	links := h.links
	h.mu.Unlock()
	if h.open == nil {
		h.open = map[string]*watched{}
	}
	for name, w := range h.open {
		if watch[name] != w.pid {
			w.close()
			delete(h.open, name)
		}
	}
	for name, pid := range watch {
		w := h.open[name]
		if w == nil {
			w = &watched{pid: pid, files: map[int]*os.File{}}
			h.open[name] = w
		}
		if pw, ok := w.read(); ok {
			if r.procWait == nil {
				r.procWait = map[string]procWait{}
			}
			r.procWait[name] = pw
		}
	}
	if links != nil {
		l := links.Take()
		r.links = &l
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

// watched is a watched process's schedstat files, one per thread, kept open: reading
// an open file again is one system call, opening it three, and five JVMs have hundreds
// of threads between them (docs/performance.md has what it saves).
type watched struct {
	pid   int
	files map[int]*os.File // by thread id
	buf   [128]byte
}

// read is how long each of the process's threads has waited for a CPU so far, ns,
// from /proc/PID/task/TID/schedstat (the second field). A thread that exits while it
// is read is left out; a process that is gone (or a zombie: no threads) is not read.
func (w *watched) read() (procWait, bool) {
	dir := "/proc/" + strconv.Itoa(w.pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		w.close()
		return procWait{}, false
	}
	pw := procWait{pid: w.pid, threads: make(map[int]uint64, len(tasks))}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		f := w.files[tid]
		if f == nil {
			if f, err = os.Open(dir + t.Name() + "/schedstat"); err != nil {
				continue
			}
			w.files[tid] = f
		}
		if v, ok := schedWait(f, w.buf[:]); ok {
			pw.threads[tid] = v
		}
	}
	for tid, f := range w.files { // exited threads
		if _, ok := pw.threads[tid]; !ok {
			f.Close()
			delete(w.files, tid)
		}
	}
	return pw, true
}

func (w *watched) close() {
	for tid, f := range w.files {
		f.Close()
		delete(w.files, tid)
	}
}

// schedWait reads an open schedstat file's second field (run-queue wait, ns) afresh.
func schedWait(f *os.File, buf []byte) (uint64, bool) {
	n, err := f.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return 0, false
	}
	fields := bytes.Fields(buf[:n])
	if len(fields) < 2 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(fields[1]), 10, 64)
	return v, err == nil
}

var gcSample = []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}

// gcPauses is the total of this process's stop-the-world GC pauses so far, seconds,
// from the runtime's histogram (each bucket counted at its lower bound), and the CPU
// time its garbage collector took so far, seconds.
func gcPauses() (pauses, cpu float64) {
	metrics.Read(gcSample)
	if gcSample[1].Value.Kind() == metrics.KindFloat64 {
		cpu = gcSample[1].Value.Float64()
	}
	if gcSample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, cpu
	}
	h := gcSample[0].Value.Float64Histogram()
	for i, c := range h.Counts {
		if lo := h.Buckets[i]; c > 0 && !math.IsInf(lo, -1) {
			pauses += float64(c) * lo
		}
	}
	return pauses, cpu
}

// ProcessCPU is the CPU this process has used so far, every thread's (the collector's
// too), user and system; 0 if the kernel does not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
