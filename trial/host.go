package trial

import (
	"encoding/csv"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/csvfile"
	"github.com/polebench/polebench/hiccup"
)

// hostColumns are host.csv's columns before one wait_pct_<process> per watched process.
var hostColumns = []string{"t_ms", "period_ms", "cpu_busy_pct", "cpu_pressure_pct", "harness_gc_pause_ms", "harness_gc_cpu_ms", "link_msgs", "link_late_p99_ms", "link_late_max_ms"}

const waitPrefix = "wait_pct_"

// linkMeanColumn is host.csv's mean lateness of the links' deliveries, after
// hostColumns: run directories written before it have none (their links' effect on
// the means is not judged).
const linkMeanColumn = "link_late_mean_ms"

// stallColumns are hiccups.csv's columns.
var stallColumns = []string{"process", "start_ms", "length_ms"}

// writeHost writes what the host did: hiccups-<process>.hlog per process (the lateness
// of every wake, one interval histogram per life), hiccups.csv (every stall over the
// threshold) and host.csv (the host every 100 ms), all on the run's clock.
func (s *Store) writeHost(h *Host) error {
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(h.Reports)) {
		errs = append(errs, writeHiccupLog(s.Path("hiccups-"+p+".hlog"), h.Reports[p], h.Start))
	}
	stalls, host := hostRows(h)
	errs = append(errs, writeCSV(s.Path(HiccupsFile), stalls), writeCSV(s.Path(HostFile), host))
	return errors.Join(errs...)
}

// hostRows are hiccups.csv's and host.csv's rows, headers first: what the store writes
// and what the analysis reads back, rounded as written.
func hostRows(h *Host) (stalls, host [][]string) {
	at := func(ns int64) time.Duration { return time.Duration(ns - h.Start.UnixNano()) }
	stalls = [][]string{stallColumns}
	for _, p := range slices.Sorted(maps.Keys(h.Reports)) {
		for _, r := range h.Reports[p] {
			for _, st := range r.Stalls {
				stalls = append(stalls, []string{p, msStr(at(st.Start)), msStr(time.Duration(st.Len))})
			}
		}
	}
	// A column per watched process (its threads' run-queue wait, summed over them, as a
	// share of the period), empty where it was not running.
	watched := map[string]bool{}
	for _, x := range h.Samples {
		for p := range x.ProcWaitPct {
			watched[p] = true
		}
	}
	procs := slices.Sorted(maps.Keys(watched))
	header := append(slices.Clone(hostColumns), linkMeanColumn)
	for _, p := range procs {
		header = append(header, waitPrefix+p)
	}
	host = [][]string{header}
	for _, x := range h.Samples {
		row := []string{msStr(at(x.At)), num(x.PeriodMS), num(x.CPUBusyPct), num(x.CPUSomePct), num(x.GCPauseMS), num(x.GCCPUMS),
			strconv.FormatInt(x.LinkMsgs, 10), num(x.LinkLateP99MS), num(x.LinkLateMaxMS), num(x.LinkLateMeanMS)}
		for _, p := range procs {
			v, ok := x.ProcWaitPct[p]
			if !ok {
				v = math.NaN()
			}
			row = append(row, num(v))
		}
		host = append(host, row)
	}
	return stalls, host
}

// hostInput is what the analysis takes of h: what readHost reads back once the store
// wrote it, so that a run analysed live and its stored copy agree.
func hostInput(h *Host) (*analysis.HostInput, error) {
	stallRows, hostRows := hostRows(h)
	stalls, err := newTable(HiccupsFile, stallRows, stallColumns)
	if err != nil {
		return nil, err
	}
	host, err := newTable(HostFile, hostRows, hostColumns)
	if err != nil {
		return nil, err
	}
	return parseHost(slices.Sorted(maps.Keys(h.Reports)), stalls, host)
}

// readHost reads what writeHost wrote, as the analysis takes it.
func readHost(dir string) (*analysis.HostInput, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "hiccups-*.hlog"))
	if err != nil {
		return nil, err
	}
	var procs []string
	for _, l := range logs {
		procs = append(procs, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(l), "hiccups-"), ".hlog"))
	}
	slices.Sort(procs)
	stalls, err := readCSV(filepath.Join(dir, HiccupsFile), stallColumns)
	if err != nil {
		return nil, err
	}
	host, err := readCSV(filepath.Join(dir, HostFile), hostColumns)
	if err != nil {
		return nil, err
	}
	return parseHost(procs, stalls, host)
}

// parseHost is the analysis's host input from hiccups.csv and host.csv, read, and the
// metered processes.
func parseHost(procs []string, stalls, host *table) (*analysis.HostInput, error) {
	in := &analysis.HostInput{Processes: procs}
	for _, r := range stalls.rows {
		from, length := stalls.ms(r, 1), stalls.ms(r, 2)
		in.Stalls = append(in.Stalls, analysis.HostStall{Process: r.f[0], From: from, To: from + length})
	}
	var err error
	meanCol := slices.Index(host.header, linkMeanColumn)
	for _, r := range host.rows {
		x := analysis.HostSample{At: host.ms(r, 0), PeriodMS: host.num(r, 1), CPUBusyPct: host.num(r, 2), CPUSomePct: host.num(r, 3),
			GCPauseMS: host.num(r, 4), LinkLateP99MS: host.num(r, 7), LinkLateMaxMS: host.num(r, 8), LinkLateMeanMS: math.NaN()}
		if x.LinkMsgs, err = strconv.ParseInt(r.f[6], 10, 64); err != nil {
			host.fail(r, 6, err)
		}
		if meanCol >= 0 {
			x.LinkLateMeanMS = host.num(r, meanCol)
		}
		for i := len(hostColumns); i < len(host.header); i++ {
			if r.f[i] == "" || !strings.HasPrefix(host.header[i], waitPrefix) {
				continue
			}
			if x.ProcWaitPct == nil {
				x.ProcWaitPct = map[string]float64{}
			}
			x.ProcWaitPct[strings.TrimPrefix(host.header[i], waitPrefix)] = host.num(r, i)
		}
		in.Samples = append(in.Samples, x)
	}
	if err := errors.Join(stalls.err, host.err); err != nil {
		return nil, err
	}
	return in, nil
}

// table is a CSV file read whole, with the first error met naming file, line and column.
type table struct {
	path   string
	header []string
	rows   []row
	err    error
}

type row struct {
	line int
	f    []string
}

func readCSV(path string, want []string) (*table, error) {
	f, err := csvfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return newTable(path, recs, want)
}

// newTable is the table of a CSV file's records, path's, whose header begins with want.
func newTable(path string, recs [][]string, want []string) (*table, error) {
	if len(recs) == 0 || len(recs[0]) < len(want) || !slices.Equal(recs[0][:len(want)], want) {
		return nil, fmt.Errorf("%s:1: header: want %s", path, strings.Join(want, ","))
	}
	t := &table{path: path, header: recs[0]}
	for i, r := range recs[1:] {
		t.rows = append(t.rows, row{line: i + 2, f: r})
	}
	return t, nil
}

func (t *table) fail(r row, col int, err error) {
	if t.err == nil {
		t.err = fmt.Errorf("%s:%d: %s: %w", t.path, r.line, t.header[col], err)
	}
}

// num is a float column, NaN where empty (a reading the host does not have).
func (t *table) num(r row, col int) float64 {
	if r.f[col] == "" {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(r.f[col], 64)
	if err != nil {
		t.fail(r, col, err)
	}
	return v
}

// ms is a column of milliseconds as a duration, to the nanosecond msStr wrote.
func (t *table) ms(r row, col int) time.Duration {
	v := t.num(r, col)
	return time.Duration(math.Round(v * 1e6))
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
