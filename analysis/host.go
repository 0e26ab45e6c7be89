package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/polebench/polebench/workload"
)

// The verdict on a window says whether its numbers are the system's or partly the
// host's: the share of the window's acknowledged requests that a long stall of a
// metered process overlapped (the harness's, and each replica's that runs in a process
// of its own), and the longest stall. The thresholds are docs/host.md's, with the quiet
// and loaded runs they come from. CPU busy and pressure are reported, not judged: on
// the local backend the system's own goroutines load the host as much as a neighbour.
const (
	// StallMS: a stall this long or longer counts against the requests it overlapped
	// (the meter keeps every stall from 1 ms; Go's scheduler under the system's own
	// load accounts for most of those up to a few ms).
	StallMS = 5.0
	// DegradedStalledPct: more of the requests than this overlapped a stall.
	DegradedStalledPct = 0.5
	// UntrustedStalledPct: so many requests overlapped a stall that the window's mean
	// and tail are the host's as much as the system's.
	UntrustedStalledPct = 5.0
	// DegradedStallMS: one stall this long is a visible step in any latency plot.
	DegradedStallMS = 50.0
)

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

// HostVerdict judges window w of a run from what its host did.
func HostVerdict(h *HostInput, w Window, recs []workload.Record) *HostWindow {
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
	for _, s := range h.Samples {
		if s.At <= w.From || s.At > w.To {
			continue
		}
		if !math.IsNaN(s.CPUBusyPct) {
			busy = append(busy, s.CPUBusyPct)
		}
		if !math.IsNaN(s.CPUSomePct) {
			some = append(some, s.CPUSomePct)
		}
		hw.GCPauseMS += s.GCPauseMS
	}
	if len(busy) > 0 {
		v := mean(busy)
		hw.CPUBusyPct = &v
	}
	if len(some) > 0 {
		v := mean(some)
		hw.CPUSomePct = &v
	}
	hw.Verdict = Trusted
	degrade := func(v, format string, a ...any) {
		hw.Reasons = append(hw.Reasons, fmt.Sprintf(format, a...))
		if v == Untrusted || hw.Verdict == Trusted {
			hw.Verdict = v
		}
	}
	switch {
	case hw.StalledPct > UntrustedStalledPct:
		degrade(Untrusted, "%.1f %% of the requests overlapped a process stall of %g ms or more (untrusted above %g %%)", hw.StalledPct, StallMS, UntrustedStalledPct)
	case hw.StalledPct > DegradedStalledPct:
		degrade(Degraded, "%.1f %% of the requests overlapped a process stall of %g ms or more (degraded above %g %%)", hw.StalledPct, StallMS, DegradedStalledPct)
	}
	if hw.StallMaxMS > DegradedStallMS {
		degrade(Degraded, "a process stalled %.0f ms (degraded above %g ms)", hw.StallMaxMS, DegradedStallMS)
	}
	return hw
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
