package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/polebench/polebench/workload"
)

// StallMS: a stall this long or longer is a long stall, counted apart in the verdict's
// figures and shaded in the plots (the meter keeps every stall from 1 ms; Go's
// scheduler under the system's own load accounts for most of those up to a few ms).
// The verdict itself judges what the stalls did to the window's numbers (host_effect.go).
const StallMS = 5.0

// Verdicts on a window.
const (
	Trusted   = "trusted"
	Degraded  = "degraded"
	Untrusted = "untrusted"
)

// HostStall is a span in which one process did not run, on the run's clock.
type HostStall struct {
	Process  string
	From, To time.Duration
}

// HostSample is what the host did over the period ending at At, on the run's clock.
type HostSample struct {
	At         time.Duration
	PeriodMS   float64
	CPUBusyPct float64 // NaN unread
	CPUSomePct float64 // NaN without pressure stall information
	GCPauseMS  float64 // the harness's GC
	// ProcWaitPct is, per process watched from outside (the harness, and servers that
	// are processes of the harness's host: ZooKeeper's JVMs, poled in namespaces or
	// containers), how long its threads waited in the run queue over the period,
	// summed over its threads, in % of the period; a process not running throughout
	// the period is missing.
	ProcWaitPct map[string]float64
	// LinkMsgs is how many messages the user-space links in the harness's process
	// delivered in the period (the local backend's); LinkLateMeanMS, LinkLateP99MS and
	// LinkLateMaxMS how late they were on average, the 99th percentile and the latest
	// after their scheduled arrival, NaN without a message (the mean also in runs
	// stored before it was kept).
	LinkMsgs       int64
	LinkLateMeanMS float64
	LinkLateP99MS  float64
	LinkLateMaxMS  float64
}

// HostInput is what the run measured of its host.
type HostInput struct {
	Processes []string // the metered processes
	Stalls    []HostStall
	Samples   []HostSample
}

// HostWindow is the host's part in one window, and the verdict on the window.
type HostWindow struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons,omitempty"`
	// Effects is what the verdict judged: how far the host moved each statistic.
	Effects []HostEffect `json:"effects,omitempty"`
	// StalledPct is the share of the window's acknowledged requests whose time (intended
	// send to reply) overlapped a stall of StallMS or more of a metered process.
	StalledPct float64 `json:"stalled_requests_pct"`
	Stalls     int     `json:"stalls"` // every stall over the meter's 1 ms
	LongStalls int     `json:"long_stalls"`
	StallMaxMS float64 `json:"stall_max_ms"`
	// StallTimePct is the share of the window in which some metered process stalled.
	StallTimePct float64  `json:"stall_time_pct"`
	CPUBusyPct   *float64 `json:"cpu_busy_pct,omitempty"`
	CPUSomePct   *float64 `json:"cpu_pressure_pct,omitempty"`
	GCPauseMS    float64  `json:"harness_gc_pause_ms"`
	Processes    []string `json:"processes"`
	// ProcWaitPct is each process watched from outside: its mean run-queue wait over
	// the window's samples (HostSample.ProcWaitPct).
	ProcWaitPct map[string]float64 `json:"proc_wait_pct,omitempty"`
	// The user-space links in the harness's process over the window: the messages
	// they delivered, their mean lateness after their schedule (judged: linkEffects;
	// nil in runs stored before it was kept), the latest delivery, and the highest of
	// the 100 ms periods' p99 lateness.
	LinkMsgs           int64    `json:"link_msgs,omitempty"`
	LinkLateMeanMS     *float64 `json:"link_late_mean_ms,omitempty"`
	LinkLateMaxMS      *float64 `json:"link_late_max_ms,omitempty"`
	LinkLateWorstP99MS *float64 `json:"link_late_worst_p99_ms,omitempty"`
}

// span is a stretch of the run's clock.
type span struct{ from, to time.Duration }

// union merges the stalls of every process into disjoint spans, in order.
func union(stalls []HostStall) []span {
	s := make([]span, 0, len(stalls))
	for _, st := range stalls {
		s = append(s, span{st.From, st.To})
	}
	slices.SortFunc(s, func(a, b span) int { return int(a.from - b.from) })
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 && x.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, x.to)
			continue
		}
		out = append(out, x)
	}
	return out
}

// overlaps says whether [from, to] meets one of the disjoint, ordered spans.
func overlaps(spans []span, from, to time.Duration) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to >= from })
	return i < len(spans) && spans[i].from <= to
}

// hostFigures counts what the host did in window w: the stalls, the share of the
// requests a long one overlapped, the samples' means. They are figures beside the
// verdict, not what it judges.
func hostFigures(h *HostInput, w Window, recs []workload.Record) *HostWindow {
	hw := &HostWindow{Processes: h.Processes}
	var long []HostStall
	for _, st := range h.Stalls {
		if ms(st.To-st.From) >= StallMS {
			long = append(long, st)
		}
	}
	spans := union(long)
	n, stalled := 0, 0
	for _, r := range recs {
		if r.Outcome != workload.OK || r.Intended < w.From || r.Intended >= w.To {
			continue
		}
		n++
		if overlaps(spans, r.Intended, r.Done) {
			stalled++
		}
	}
	if n > 0 {
		hw.StalledPct = 100 * float64(stalled) / float64(n)
	}
	for _, st := range h.Stalls {
		if st.To > w.From && st.From < w.To {
			hw.Stalls++
			if ms(st.To-st.From) >= StallMS {
				hw.LongStalls++
			}
			hw.StallMaxMS = max(hw.StallMaxMS, ms(st.To-st.From))
		}
	}
	var covered time.Duration
	for _, s := range union(h.Stalls) {
		covered += max(0, min(s.to, w.To)-max(s.from, w.From))
	}
	if w.To > w.From {
		hw.StallTimePct = 100 * float64(covered) / float64(w.To-w.From)
	}
	var busy, some []float64
	wait := map[string][]float64{}
	var lateMax, lateP99 float64
	for _, s := range windowSamples(h, w) {
		if !math.IsNaN(s.CPUBusyPct) {
			busy = append(busy, s.CPUBusyPct)
		}
		if !math.IsNaN(s.CPUSomePct) {
			some = append(some, s.CPUSomePct)
		}
		hw.GCPauseMS += s.GCPauseMS
		for p, v := range s.ProcWaitPct {
			wait[p] = append(wait[p], v)
		}
		if s.LinkMsgs > 0 {
			hw.LinkMsgs += s.LinkMsgs
			lateMax, lateP99 = max(lateMax, s.LinkLateMaxMS), max(lateP99, s.LinkLateP99MS)
		}
	}
	for p, v := range wait {
		if hw.ProcWaitPct == nil {
			hw.ProcWaitPct = map[string]float64{}
		}
		hw.ProcWaitPct[p] = mean(v)
	}
	if hw.LinkMsgs > 0 {
		hw.LinkLateMaxMS, hw.LinkLateWorstP99MS = &lateMax, &lateP99
	}
	hw.LinkLateMeanMS = linkLateMean(h, w)
	hw.CPUBusyPct, hw.CPUSomePct = MeanOf(busy), MeanOf(some)
	return hw
}

// windowSamples are the samples whose period ended in w.
func windowSamples(h *HostInput, w Window) []HostSample {
	var out []HostSample
	for _, s := range h.Samples {
		if s.At > w.From && s.At <= w.To {
			out = append(out, s)
		}
	}
	return out
}

// linkLateMean is the mean lateness of the links' deliveries over w's samples, each
// period's mean weighted by its messages; nil without a message or a mean.
func linkLateMean(h *HostInput, w Window) *float64 {
	var n, late float64
	for _, s := range windowSamples(h, w) {
		if s.LinkMsgs > 0 && !math.IsNaN(s.LinkLateMeanMS) {
			n += float64(s.LinkMsgs)
			late += s.LinkLateMeanMS * float64(s.LinkMsgs)
		}
	}
	if n == 0 {
		return nil
	}
	m := late / n
	return &m
}

// contention says, beside a verdict that is not trusted, what the host's contention
// looked like: the run-queue wait of the processes watched from outside, the most
// waiting first (those without a meter are judged by it too: hostEffects), and how
// late the user-space links delivered (judged by their mean too: linkEffects).
func (hw *HostWindow) contention() []string {
	var out []string
	if len(hw.ProcWaitPct) > 0 {
		procs := slices.Collect(maps.Keys(hw.ProcWaitPct))
		slices.SortFunc(procs, func(a, b string) int {
			if c := cmp.Compare(hw.ProcWaitPct[b], hw.ProcWaitPct[a]); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		parts := make([]string, len(procs))
		for i, p := range procs {
			parts[i] = fmt.Sprintf("%s %.0f %%", p, hw.ProcWaitPct[p])
		}
		out = append(out, "run-queue wait of the processes watched from outside, in % of the window summed over their threads: "+strings.Join(parts, ", "))
	}
	if hw.LinkLateMaxMS != nil {
		mean := ""
		if hw.LinkLateMeanMS != nil {
			mean = fmt.Sprintf(", %.2f ms on average", *hw.LinkLateMeanMS)
		}
		out = append(out, fmt.Sprintf("the user-space links delivered up to %.1f ms after their schedule, p99 up to %.1f ms in a 100 ms period%s", *hw.LinkLateMaxMS, *hw.LinkLateWorstP99MS, mean))
	}
	return out
}

// MeanOf is the mean of v, nil for none: a reading the host did not have.
func MeanOf(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	m := mean(v)
	return &m
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
