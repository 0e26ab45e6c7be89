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
)

// harnessProcess names the harness's own process among the metered ones: it carries
// the workload and, on the local backend, the replicas too.
const harnessProcess = "harness"

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

func startHostMeter(ctx context.Context) *hostMeter {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &hostMeter{meter: hiccup.New(0, 0), host: hiccup.NewHostSampler(0), cancel: cancel, reports: map[string][]hiccup.Report{}}
	h.wg.Go(func() { h.meter.Run(ctx) })
	h.wg.Go(func() { h.host.Run(ctx) })
	return h
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
	reports := map[string][]hiccup.Report{harnessProcess: {h.meter.Report(harnessProcess)}}
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
	host := [][]string{{"t_ms", "period_ms", "cpu_busy_pct", "cpu_pressure_pct", "harness_gc_pause_ms"}}
	for _, s := range h.host.Samples() {
		t := at(s.At)
		in.Samples = append(in.Samples, analysis.HostSample{At: t, PeriodMS: s.PeriodMS, CPUBusyPct: s.CPUBusyPct, CPUSomePct: s.CPUSomePct, GCPauseMS: s.GCPauseMS})
		host = append(host, []string{msStr(t), num(s.PeriodMS), num(s.CPUBusyPct), num(s.CPUSomePct), num(s.GCPauseMS)})
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
