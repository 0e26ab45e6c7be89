package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/csvfile"
	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/netem"
)

// hostMeter measures the host while a trial runs: the harness's hiccup meter, the host
// sampler, and the reports of the replicas' own meters (servers in processes of their
// own: netns, docker, swarm), a killed server's fetched before it dies.
type hostMeter struct {
	meter  *hiccup.Meter
	host   *hiccup.HostSampler
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	reports map[string][]hiccup.Report // process -> one report per life
}

// startHostMeter starts the meters of the harness and of cl: the host sampler also
// samples the lateness of the user-space links in this process (the local backend's,
// poled's and ZooKeeper's), and watches the harness and every server that is a
// process of this host from outside (watchServer).
func startHostMeter(ctx context.Context, cl cluster.Cluster) *hostMeter {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &hostMeter{meter: hiccup.New(0, 0), host: hiccup.NewHostSampler(0), cancel: cancel, reports: map[string][]hiccup.Report{}}
	h.host.Links(netem.LinkLateness)
	h.host.Watch(analysis.HarnessProcess, os.Getpid())
	for _, s := range cl.Servers() {
		h.watchServer(cl, s.ID)
	}
	h.wg.Go(func() { h.meter.Run(ctx) })
	h.wg.Go(func() { h.host.Run(ctx) })
	return h
}

// watchServer has the host sampler measure server id's process from outside (its
// threads' wait for a CPU), under the server's name, where the cluster's servers are
// processes of this host; a server that is not running is no longer watched, and a
// restarted one is watched under its new pid.
func (h *hostMeter) watchServer(cl cluster.Cluster, id int) {
	p, ok := cl.(cluster.Pids)
	if !ok {
		return
	}
	name := fmt.Sprintf("p%d", id)
	if pid := p.Pid(id); pid > 0 {
		h.host.Watch(name, pid)
	} else {
		h.host.Unwatch(name)
	}
}

// fetch keeps server s's meter report; a later fetch of the same life replaces it, a
// new life (a restarted process) is added beside the old one.
func (h *hostMeter) fetch(ctx context.Context, s cluster.Server) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	r, ok, err := cluster.NodeHiccups(ctx, s)
	if err != nil || !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lives := h.reports[r.Process]
	if n := len(lives); n > 0 && lives[n-1].From == r.From {
		lives[n-1] = r
	} else {
		lives = append(lives, r)
	}
	h.reports[r.Process] = lives
}

func (h *hostMeter) collect(ctx context.Context, cl cluster.Cluster) {
	for _, s := range cl.Servers() {
		if cl.Alive(s.ID) {
			h.fetch(ctx, s)
		}
	}
}

// stop ends the harness's meter and sampler.
func (h *hostMeter) stop() {
	h.cancel()
	h.wg.Wait()
}

// write stops the meters and writes what they measured into dir: hiccups-<process>.hlog
// per process (the lateness of every wake, one interval histogram per life),
// hiccups.csv (every stall over the threshold) and host.csv (the host every 100 ms),
// all on the run's clock from start. It returns the same for the analysis.
func (h *hostMeter) write(dir string, start time.Time) (*analysis.HostInput, error) {
	h.stop()
	h.mu.Lock()
	reports := map[string][]hiccup.Report{analysis.HarnessProcess: {h.meter.Report(analysis.HarnessProcess)}}
	for p, r := range h.reports {
		reports[p] = r
	}
	h.mu.Unlock()
	at := func(ns int64) time.Duration { return time.Duration(ns - start.UnixNano()) }
	in := &analysis.HostInput{}
	stalls := [][]string{{"process", "start_ms", "length_ms"}}
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(reports)) {
		in.Processes = append(in.Processes, p)
		errs = append(errs, writeHiccupLog(filepath.Join(dir, "hiccups-"+p+".hlog"), reports[p], start))
		for _, r := range reports[p] {
			for _, st := range r.Stalls {
				in.Stalls = append(in.Stalls, analysis.HostStall{Process: p, From: at(st.Start), To: at(st.End())})
				stalls = append(stalls, []string{p, msStr(at(st.Start)), msStr(time.Duration(st.Len))})
			}
		}
	}
	errs = append(errs, writeCSV(filepath.Join(dir, "hiccups.csv"), stalls))
	samples := h.host.Samples()
	// A column per watched process (wait_pct_<process>: its threads' run-queue wait,
	// summed over them, as a share of the period), empty where it was not running.
	watched := map[string]bool{}
	for _, s := range samples {
		for p := range s.ProcWaitPct {
			watched[p] = true
		}
	}
	procs := slices.Sorted(maps.Keys(watched))
	header := []string{"t_ms", "period_ms", "cpu_busy_pct", "cpu_pressure_pct", "harness_gc_pause_ms", "harness_gc_cpu_ms", "link_msgs", "link_late_p99_ms", "link_late_max_ms"}
	for _, p := range procs {
		header = append(header, "wait_pct_"+p)
	}
	host := [][]string{header}
	for _, s := range samples {
		t := at(s.At)
		in.Samples = append(in.Samples, analysis.HostSample{At: t, PeriodMS: s.PeriodMS, CPUBusyPct: s.CPUBusyPct, CPUSomePct: s.CPUSomePct, GCPauseMS: s.GCPauseMS,
			ProcWaitPct: s.ProcWaitPct, LinkMsgs: s.LinkMsgs, LinkLateP99MS: s.LinkLateP99MS, LinkLateMaxMS: s.LinkLateMaxMS})
		row := []string{msStr(t), num(s.PeriodMS), num(s.CPUBusyPct), num(s.CPUSomePct), num(s.GCPauseMS), num(s.GCCPUMS),
			strconv.FormatInt(s.LinkMsgs, 10), num(s.LinkLateP99MS), num(s.LinkLateMaxMS)}
		for _, p := range procs {
			v, ok := s.ProcWaitPct[p]
			if !ok {
				v = math.NaN()
			}
			row = append(row, num(v))
		}
		host = append(host, row)
	}
	errs = append(errs, writeCSV(filepath.Join(dir, "host.csv"), host))
	return in, errors.Join(errs...)
}

func writeCSV(path string, rows [][]string) error {
	w, err := csvfile.Create(path)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

func msStr(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

// num writes a float, empty for NaN (a reading the host does not have).
func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// writeHiccupLog writes a process's lives as an HDR histogram log, jHiccup's format:
// one interval histogram per life, its start and end on the run's clock.
func writeHiccupLog(path string, lives []hiccup.Report, start time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("hiccups: %w", err)
	}
	lw := hdrhistogram.NewHistogramLogWriter(f)
	errs := []error{lw.OutputLogFormatVersion(), lw.OutputStartTime(start.UnixMilli()),
		lw.OutputComment(fmt.Sprintf("[polebench hiccups of %s, ns late per wake of a %v sleep]", lives[0].Process, time.Duration(lives[0].Interval))),
		lw.OutputLegend()}
	for _, r := range lives {
		h := r.Histogram()
		h.SetStartTimeMs(r.From / 1e6)
		h.SetEndTimeMs(r.To / 1e6)
		errs = append(errs, lw.OutputIntervalHistogram(h))
	}
	errs = append(errs, f.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hiccups: writing %s: %w", path, err)
	}
	return nil
}
