package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/workload"
)

func TestHostVerdict(t *testing.T) {
	ms := time.Millisecond
	// 1000 requests, one every 10 ms from 0 to 10 s, each taking 5 ms.
	var recs []workload.Record
	for i := range 1000 {
		at := time.Duration(i) * 10 * ms
		recs = append(recs, workload.Record{Intended: at, Done: at + 5*ms, Outcome: workload.OK})
	}
	recs = append(recs, workload.Record{Intended: 0, Done: 10 * time.Second, Outcome: workload.Failed}) // not counted
	w := Window{Name: "before", From: 0, To: 10 * time.Second}
	stall := func(p string, from, to time.Duration) HostStall { return HostStall{Process: p, From: from, To: to} }
	quiet := []HostSample{{At: 5 * time.Second, CPUBusyPct: 40, CPUSomePct: 2, GCPauseMS: 0.5}, {At: 20 * time.Second, CPUBusyPct: 100, CPUSomePct: 90}}
	for _, c := range []struct {
		name    string
		stalls  []HostStall
		samples []HostSample
		verdict string
		pct     float64
		reasons int
	}{
		{"no stall", nil, quiet, Trusted, 0, 0},
		// Two requests meet [101, 112] ms (100 and 110), overlapping stalls of two
		// processes merge; a stall outside the window does not count.
		{"a few stalls", []HostStall{stall("harness", 101*ms, 108*ms), stall("p1", 105*ms, 112*ms), stall("p1", 11*time.Second, 12*time.Second)}, quiet, Trusted, 0.2, 0},
		{"degraded by share", []HostStall{stall("harness", 0, 25*ms), stall("p1", 200*ms, 225*ms)}, quiet, Degraded, 0.6, 1},
		{"one long stall", []HostStall{stall("p3", 2*time.Second+3*ms, 2*time.Second+4*ms), stall("p3", 5*time.Second+6*ms, 5*time.Second+9*ms+60*ms)}, nil, Degraded, 0.6, 2}, // the 1 ms stall is below StallMS
		{"untrusted", []HostStall{stall("harness", time.Second, 2*time.Second)}, quiet, Untrusted, 10.1, 2},
		{"pressure is reported, not judged", nil, []HostSample{{At: time.Second, CPUBusyPct: 100, CPUSomePct: 95}}, Trusted, 0, 0},
		{"short stalls do not count", []HostStall{stall("harness", time.Second, time.Second+4*ms), stall("p1", 2*time.Second, 2*time.Second+4*ms)}, quiet, Trusted, 0, 0},
		{"no pressure information", nil, []HostSample{{At: time.Second, CPUBusyPct: 100, CPUSomePct: math.NaN()}}, Trusted, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := HostVerdict(&HostInput{Processes: []string{"harness", "p1"}, Stalls: c.stalls, Samples: c.samples}, w, recs)
			if h.Verdict != c.verdict || math.Abs(h.StalledPct-c.pct) > 1e-9 || len(h.Reasons) != c.reasons {
				t.Errorf("verdict %s, %.2f %% stalled, reasons %q; want %s, %.2f %%, %d reasons", h.Verdict, h.StalledPct, h.Reasons, c.verdict, c.pct, c.reasons)
			}
			if !slices.Equal(h.Processes, []string{"harness", "p1"}) {
				t.Errorf("processes %v", h.Processes)
			}
		})
	}
}

func TestHostStallTime(t *testing.T) {
	h := HostVerdict(&HostInput{Stalls: []HostStall{
		{Process: "a", From: 0, To: 100 * time.Millisecond},
		{Process: "b", From: 50 * time.Millisecond, To: 150 * time.Millisecond},
		{Process: "a", From: 990 * time.Millisecond, To: 1100 * time.Millisecond},
	}}, Window{From: 0, To: time.Second}, nil)
	if math.Abs(h.StallTimePct-16) > 1e-9 || h.Stalls != 3 || h.StallMaxMS != 110 {
		t.Errorf("stall time %.2f %%, %d stalls, longest %.1f ms; want 16 %%, 3, 110", h.StallTimePct, h.Stalls, h.StallMaxMS)
	}
}

// The processes watched from outside and the user-space links are reported per window,
// and named among the reasons of a window that is not trusted, never judged.
func TestHostContention(t *testing.T) {
	ms := time.Millisecond
	var recs []workload.Record
	for i := range 100 {
		at := time.Duration(i) * 10 * ms
		recs = append(recs, workload.Record{Intended: at, Done: at + 5*ms, Outcome: workload.OK})
	}
	w := Window{Name: "before", From: 0, To: time.Second}
	samples := []HostSample{
		{At: 100 * ms, ProcWaitPct: map[string]float64{"p1": 10, "harness": 30}, LinkMsgs: 50, LinkLateP99MS: 0.5, LinkLateMaxMS: 2},
		{At: 200 * ms, ProcWaitPct: map[string]float64{"p1": 90, "harness": 10}, LinkMsgs: 0, LinkLateP99MS: math.NaN(), LinkLateMaxMS: math.NaN()},
		{At: 300 * ms, ProcWaitPct: map[string]float64{"harness": 20}, LinkMsgs: 10, LinkLateP99MS: 1.5, LinkLateMaxMS: 1.5},
		{At: 2 * time.Second, ProcWaitPct: map[string]float64{"p1": 1000}, LinkMsgs: 5, LinkLateP99MS: 100, LinkLateMaxMS: 100}, // outside
	}
	h := HostVerdict(&HostInput{Processes: []string{"harness"}, Samples: samples}, w, recs)
	if h.Verdict != Trusted || len(h.Reasons) != 0 {
		t.Errorf("%s with %q: high waits are reported, not judged", h.Verdict, h.Reasons)
	}
	if h.ProcWaitPct["p1"] != 50 || h.ProcWaitPct["harness"] != 20 || len(h.ProcWaitPct) != 2 {
		t.Errorf("mean waits %v, want p1 50, harness 20", h.ProcWaitPct)
	}
	if h.LinkMsgs != 60 || h.LinkLateMaxMS == nil || *h.LinkLateMaxMS != 2 || *h.LinkLateWorstP99MS != 1.5 {
		t.Errorf("links: %d messages, max %v, worst p99 %v; want 60, 2, 1.5", h.LinkMsgs, h.LinkLateMaxMS, h.LinkLateWorstP99MS)
	}
	stalled := &HostInput{Processes: []string{"harness"}, Samples: samples, Stalls: []HostStall{{Process: "harness", From: 0, To: 45 * ms}}}
	h = HostVerdict(stalled, w, recs)
	if h.Verdict != Degraded || len(h.Reasons) != 3 || !strings.Contains(h.Reasons[1], "p1 50 %, harness 20 %") || !strings.Contains(h.Reasons[2], "up to 2.0 ms") {
		t.Errorf("%s with %q; want degraded, the stalls first, then p1 before the harness, then the links", h.Verdict, h.Reasons)
	}
	h = HostVerdict(&HostInput{Stalls: stalled.Stalls}, w, recs)
	if len(h.Reasons) != 1 || h.ProcWaitPct != nil || h.LinkLateMaxMS != nil {
		t.Errorf("nothing watched, no links: %q, %v, %v", h.Reasons, h.ProcWaitPct, h.LinkLateMaxMS)
	}
}
