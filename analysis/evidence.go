package analysis

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
)

// The evidence behind a figure is one run's directory, read back as a reader would
// look at it: its latency over time with every fault shaded, and its percentiles.

// RunData is what a run directory holds for its figures.
type RunData struct {
	Dir     string
	Summary *Summary
	Series  *Series         // timeseries.csv
	Events  []record.Record // events.jsonl
	// Stalls are the host's stalls (hiccups.csv); HostMeasured is false when the run
	// has no hiccups.csv (the simulator, or a run from before the meter).
	Stalls       []HostStall
	HostMeasured bool
	// Histograms are the HDR logs by window ("before", "after") and DC (All too).
	Histograms map[string]map[string]*hdrhistogram.Histogram
}

// ReadRun reads a run directory's summary.json, timeseries.csv, events.jsonl, HDR
// logs and, when it has one, hiccups.csv. Each error names the file.
func ReadRun(dir string) (*RunData, error) {
	rd := &RunData{Dir: dir, Histograms: map[string]map[string]*hdrhistogram.Histogram{}}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	rd.Summary = &Summary{}
	if err := json.Unmarshal(b, rd.Summary); err != nil {
		return nil, fmt.Errorf("analysis: %s: %w", filepath.Join(dir, "summary.json"), err)
	}
	if rd.Series, err = ReadSeriesCSV(filepath.Join(dir, "timeseries.csv")); err != nil {
		return nil, err
	}
	if rd.Events, err = record.ReadEvents(filepath.Join(dir, "events.jsonl")); err != nil {
		return nil, err
	}
	if rd.Stalls, err = ReadStalls(filepath.Join(dir, "hiccups.csv")); err == nil {
		rd.HostMeasured = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	logs, err := filepath.Glob(filepath.Join(dir, "hdr-*.hlog"))
	if err != nil {
		return nil, err
	}
	for _, l := range logs {
		w, dc, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(l), "hdr-"), ".hlog"), "-")
		if !ok {
			continue
		}
		h, err := ReadHistogram(l)
		if err != nil {
			return nil, err
		}
		if rd.Histograms[w] == nil {
			rd.Histograms[w] = map[string]*hdrhistogram.Histogram{}
		}
		rd.Histograms[w][dc] = h
	}
	return rd, nil
}

// ReadHistogram reads the first interval histogram of an HdrHistogram log.
func ReadHistogram(path string) (*hdrhistogram.Histogram, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	defer f.Close()
	h, err := hdrhistogram.NewHistogramLogReader(f).NextIntervalHistogram()
	if err != nil {
		return nil, fmt.Errorf("analysis: %s: %w", path, err)
	}
	if h == nil {
		return nil, fmt.Errorf("analysis: %s: no histogram in the log", path)
	}
	return h, nil
}

// ReadSeriesCSV reads a timeseries.csv (Series.WriteCSV's dc,t_s,mean_ms,ok,failed,
// unknown); the bucket is the smallest step between a DC's points.
func ReadSeriesCSV(path string) (*Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("analysis: %s: %w", path, err)
	}
	want := []string{"dc", "t_s", "mean_ms", "ok", "failed", "unknown"}
	if !slices.Equal(head, want) {
		return nil, fmt.Errorf("analysis: %s: header %s, want %s", path, strings.Join(head, ","), strings.Join(want, ","))
	}
	s := &Series{Points: map[string][]Point{}}
	step := math.Inf(1)
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("analysis: %s: %w", path, err)
		}
		var nums [5]float64
		for i := range nums {
			if nums[i], err = strconv.ParseFloat(rec[i+1], 64); err != nil {
				return nil, fmt.Errorf("analysis: %s:%d: %s: %w", path, line, want[i+1], err)
			}
		}
		dc := rec[0]
		pts := s.Points[dc]
		if n := len(pts); n > 0 && nums[0]-pts[n-1].T > 0 {
			step = math.Min(step, nums[0]-pts[n-1].T)
		}
		if pts == nil {
			s.DCs = append(s.DCs, dc)
		}
		s.Points[dc] = append(pts, Point{T: nums[0], MeanMS: nums[1], Count: int(nums[2]), Failed: int(nums[3]), Unknown: int(nums[4])})
	}
	slices.Sort(s.DCs)
	s.Bucket = 250 * time.Millisecond
	if !math.IsInf(step, 1) {
		s.Bucket = time.Duration(math.Round(step*1000)) * time.Millisecond
	}
	return s, nil
}

// ReadStalls reads a hiccups.csv: every stall of a metered process (process,start_ms,
// length_ms) on the run's clock.
func ReadStalls(path string) ([]HostStall, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("analysis: %s: %w", path, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], []string{"process", "start_ms", "length_ms"}) {
		return nil, fmt.Errorf("analysis: %s: want the header process,start_ms,length_ms", path)
	}
	var out []HostStall
	for i, rec := range recs[1:] {
		from, err1 := strconv.ParseFloat(rec[1], 64)
		length, err2 := strconv.ParseFloat(rec[2], 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("analysis: %s:%d: %w", path, i+2, err)
		}
		out = append(out, HostStall{Process: rec[0], From: msDur(from), To: msDur(from + length)})
	}
	return out, nil
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// Fault kinds as a run's figures shade them.
const (
	FaultCrash = "crash" // the leader's crash until the new leader's first commit
	FaultDown  = "down"  // a server killed, until it restarts
	FaultCut   = "cut"   // links cut (partition, isolate, outdate) until healed
	FaultPause = "pause" // a server paused, until it resumes
	FaultOther = "other" // a fault of a kind this code does not know: an instant
)

// FaultSpan is a fault of the run: what, whom, and from when to when.
type FaultSpan struct {
	Kind     string
	Server   int
	From, To time.Duration
	Label    string // "p5 crashed", "p1 down", "p1 outdated: cut off"
}

// Faults reads every fault of a run off its timeline: the crash until the new
// leader's first commit, each kill until its restart, each cut of links until it is
// healed, each pause until it resumes (the end of the run, end, when it never is).
func Faults(tl []record.Record, end time.Duration) []FaultSpan {
	var out []FaultSpan
	open := map[string]int{} // kind/server -> index in out, while open
	key := func(kind string, server int) string { return fmt.Sprintf("%s/%d", kind, server) }
	closeSpan := func(kind string, server int, at time.Duration) {
		if i, ok := open[key(kind, server)]; ok {
			out[i].To = at
			delete(open, key(kind, server))
		}
	}
	for _, r := range tl {
		if r.Source != record.SourceHarness || r.Error != "" {
			continue
		}
		f := string(r.Fault)
		switch {
		case r.Kind == event.Kill && r.Fault == nemesis.Crash:
			out = append(out, FaultSpan{Kind: FaultCrash, Server: r.Server, From: r.At(), To: end, Label: fmt.Sprintf("p%d crashed", r.Server)})
			open[key(FaultCrash, 0)] = len(out) - 1
		case r.Kind == event.Kill:
			out = append(out, FaultSpan{Kind: FaultDown, Server: r.Server, From: r.At(), To: end, Label: fmt.Sprintf("p%d down", r.Server)})
			open[key(FaultDown, r.Server)] = len(out) - 1
		case r.Kind == event.Restart:
			closeSpan(FaultDown, r.Server, r.At())
		case r.Kind == event.Partition:
			label := "links cut"
			switch r.Fault {
			case nemesis.Outdate:
				label = fmt.Sprintf("p%d outdated: cut off", r.Server)
			case nemesis.Isolate:
				label = fmt.Sprintf("p%d isolated", r.Server)
			case nemesis.Partition:
				label = "partition"
			}
			out = append(out, FaultSpan{Kind: FaultCut, Server: r.Server, From: r.At(), To: end, Label: label})
			open[key(FaultCut, r.Server)] = len(out) - 1
		case r.Kind == event.Heal:
			if r.Fault == nemesis.Rejoin {
				closeSpan(FaultCut, r.Server, r.At())
				continue
			}
			for k, i := range open { // a heal restores every cut link
				if strings.HasPrefix(k, FaultCut+"/") {
					out[i].To = r.At()
					delete(open, k)
				}
			}
		case strings.Contains(f, "resume") || strings.Contains(f, "unpause"):
			closeSpan(FaultPause, r.Server, r.At())
		case strings.Contains(f, "pause"):
			out = append(out, FaultSpan{Kind: FaultPause, Server: r.Server, From: r.At(), To: end, Label: fmt.Sprintf("p%d paused", r.Server)})
			open[key(FaultPause, r.Server)] = len(out) - 1
		case f != "":
			out = append(out, FaultSpan{Kind: FaultOther, Server: r.Server, From: r.At(), To: r.At(), Label: fmt.Sprintf("%s p%d", f, r.Server)})
		}
	}
	if i, ok := open[key(FaultCrash, 0)]; ok {
		// The crash lasts until the new leader's first commit.
		ev := FindEvents(tl, Events{})
		if ev.FirstCommit > out[i].From {
			out[i].To = ev.FirstCommit
			out[i].Label = fmt.Sprintf("p%d crashed; p%d leads from %.2f s", out[i].Server, ev.NewLeader, ev.FirstCommit.Seconds())
		}
	}
	return out
}

// End is the run's end on its clock: LOAD_END, else the last point of its series.
func (rd *RunData) End() time.Duration {
	for _, r := range rd.Events {
		if r.Kind == event.LoadEnd && r.Source == record.SourceHarness {
			return r.At()
		}
	}
	end := 0.0
	for _, pts := range rd.Series.Points {
		if n := len(pts); n > 0 {
			end = math.Max(end, pts[n-1].T+rd.Series.Bucket.Seconds()/2)
		}
	}
	return time.Duration(end * float64(time.Second))
}
