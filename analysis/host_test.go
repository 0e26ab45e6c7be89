package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/workload"
)

// held builds a window's writes from recorded stalls: one write every 1/rate from 0 to
// length in DC D1, each taking lat unless a stall meets it, which holds it to the
// stall's end (so the host's part of a write is its overlap with the stall).
func held(length time.Duration, rate int, lat time.Duration, stalls []HostStall) []workload.Record {
	var recs []workload.Record
	step := time.Second / time.Duration(rate)
	for at := time.Duration(0); at < length; at += step {
		done := at + lat
		for _, s := range stalls {
			if at < s.To && at+lat > s.From {
				done += s.To - max(at, s.From)
			}
		}
		recs = append(recs, workload.Record{DC: "D1", Server: 1, Intended: at, Sent: at, Done: done, Outcome: workload.OK})
	}
	return recs
}

// every is n stalls of process p, each d long, one every gap from gap on.
func every(p string, n int, gap, d time.Duration) []HostStall {
	var out []HostStall
	for i := 1; i <= n; i++ {
		out = append(out, HostStall{Process: p, From: time.Duration(i) * gap, To: time.Duration(i)*gap + d})
	}
	return out
}

// TestHostVerdict: the rule's three outcomes on windows built from recorded stalls and
// writes, and that it judges what the stalls did to the numbers, not how many writes
// they touched: a 5 s window with one 6 ms stall and a 60 s window with one every 5 s
// give the same effects and the same verdict, where the share of overlapped requests
// (a figure, no longer judged) is above the old rule's 0.5 %.
func TestHostVerdict(t *testing.T) {
	ms := time.Millisecond
	s := time.Second
	// A ZooKeeper JVM, watched from outside, waiting 150 % of every 100 ms period.
	waiting := func(length time.Duration, pct float64) []HostSample {
		var out []HostSample
		for at := 100 * ms; at <= length; at += 100 * ms {
			out = append(out, HostSample{At: at, PeriodMS: 100, ProcWaitPct: map[string]float64{"harness": 300, "p3": pct}})
		}
		return out
	}
	// The user-space links delivering late by meanMS on average, 100 messages a period.
	late := func(length time.Duration, meanMS float64) []HostSample {
		var out []HostSample
		for at := 100 * ms; at <= length; at += 100 * ms {
			out = append(out, HostSample{At: at, PeriodMS: 100, LinkMsgs: 100, LinkLateMeanMS: meanMS, LinkLateP99MS: 10 * meanMS, LinkLateMaxMS: 20 * meanMS})
		}
		return out
	}
	for _, c := range []struct {
		name    string
		length  time.Duration
		stalls  []HostStall
		samples []HostSample
		verdict string
		// the largest effect on the mean and on a tail, ms, and what a reason names
		mean, tail float64
		reason     string
	}{
		{"quiet", 5 * s, nil, nil, Trusted, 0, 0, ""},
		{"short window, one 6 ms stall", 5 * s, every("harness", 1, 2500*ms, 6*ms), nil, Trusted, 0.028, 6, ""},
		{"long window, one 6 ms stall every 5 s", 60 * s, every("harness", 11, 5*s, 6*ms), nil, Trusted, 0.028, 6, ""},
		{"long window, four 6 ms stalls", 60 * s, every("harness", 4, 12*s, 6*ms), nil, Trusted, 0.009, 6, ""},
		// A quiet host's longest stalls (docs/host.md): about 10 ms every few seconds
		// move a p999 by nearly their length, under its 10 ms floor.
		{"long window, a 9 ms stall every 5 s", 60 * s, every("harness", 11, 5*s, 9*ms), nil, Trusted, 0.040, 9, ""},
		// A 40 ms stall every 2 s holds 3 % of the writes: the p99 moves by most of it,
		// the mean by 0.7 ms, under 5 % of it.
		{"a tail moved", 20 * s, every("harness", 9, 2*s, 40*ms), nil, Degraded, 0.71, 40, "moved D1's p99 by 37.00 ms"},
		{"the mean moved", 10 * s, every("harness", 9, s, 100*ms), nil, Untrusted, 6.25, 100, "moved D1's mean by 6.25 ms"},
		{"a stall of a server off the write's way", 10 * s, every("p2", 9, s, 100*ms), nil, Trusted, 0, 0, ""},
		{"a JVM waiting for a CPU", 10 * s, nil, waiting(10*s, 150), Untrusted, 1.5, 0, "p3 waited 1.50 ms for a CPU per write"},
		{"a JVM waiting a little", 10 * s, nil, waiting(10*s, 20), Trusted, 0.2, 0, ""},
		// Untraced writes cross at most four links: 0.3 ms late each moves a 20 ms mean
		// by 1.2 ms, past its 5 %.
		{"links delivering late", 10 * s, nil, late(10*s, 0.3), Untrusted, 1.2, 0, "the user-space links' late deliveries moved D1's mean by about 1.20 ms"},
		{"links a little late", 10 * s, nil, late(10*s, 0.05), Trusted, 0.2, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := held(c.length, 1000, 20*ms, c.stalls)
			h := HostVerdict(&HostInput{Processes: []string{"harness", "p2"}, Stalls: c.stalls, Samples: c.samples}, Window{Name: "before", To: c.length}, recs, nil, nil)
			var mean, tail float64
			for _, e := range h.Effects {
				if e.Stat == StatMean {
					mean = max(mean, e.MS)
				} else if e.Stat != StatSendLag {
					tail = max(tail, e.MS)
				}
			}
			if h.Verdict != c.verdict || math.Abs(mean-c.mean) > 0.01 || math.Abs(tail-c.tail) > 0.01 ||
				(c.reason == "") != (len(h.Reasons) == 0) || !strings.Contains(strings.Join(h.Reasons, "; "), c.reason) {
				t.Errorf("%s, moved the mean %.3f ms, a tail %.3f ms, %q (%s)\nwant %s, %.3f, %.3f, %q", h.Verdict, mean, tail, h.Reasons, h.Moved(), c.verdict, c.mean, c.tail, c.reason)
			}
			if !slices.Equal(h.Processes, []string{"harness", "p2"}) {
				t.Errorf("processes %v", h.Processes)
			}
		})
	}
}

// TestHostVerdictPaths: with traces, a write's host part is the stalls of the processes
// on its way (the anatomy's), not every metered process's.
func TestHostVerdictPaths(t *testing.T) {
	ms := time.Millisecond
	var paths []Path
	for i := range 2000 {
		at := time.Duration(i) * 5 * ms
		p := Path{ID: uint64(i), DC: "D1", Server: 1, Leader: 1}
		for j := range p.At {
			p.At[j] = at
		}
		p.At[StepDone] = at + 2*ms
		if i%10 == 0 { // every tenth write waits 30 ms in its reply, p1 stalled all along
			p.At[StepDone] += 30 * ms
		}
		paths = append(paths, p)
	}
	var stalls []HostStall
	for i := 0; i < 2000; i += 10 {
		at := time.Duration(i)*5*ms + 2*ms
		stalls = append(stalls, HostStall{Process: "p1", From: at, To: at + 30*ms}, HostStall{Process: "p4", From: at + 40*ms, To: at + 45*ms})
	}
	w := Window{Name: "before", To: 10 * time.Second}
	h := HostVerdict(&HostInput{Processes: []string{"harness", "p1", "p4"}, Stalls: stalls}, w, nil, paths, nil)
	if h.Verdict != Untrusted || len(h.Effects) != 6 || math.Abs(h.Effects[0].MS-4.2) > 1e-6 || h.Effects[0].DC != "D1" {
		t.Errorf("%s, %+v; want untrusted, D1's mean moved by 4.2 ms: the 30 ms waits of one write in ten, and 2 ms of the six after it", h.Verdict, h.Effects)
	}
	stalls = slices.DeleteFunc(stalls, func(s HostStall) bool { return s.Process == "p1" })
	if h := HostVerdict(&HostInput{Processes: []string{"harness", "p1", "p4"}, Stalls: stalls}, w, nil, paths, nil); h.Verdict != Trusted {
		t.Errorf("p4, off every write's way: %s, %q", h.Verdict, h.Reasons)
	}
}

func TestHostStallTime(t *testing.T) {
	h := HostVerdict(&HostInput{Stalls: []HostStall{
		{Process: "a", From: 0, To: 100 * time.Millisecond},
		{Process: "b", From: 50 * time.Millisecond, To: 150 * time.Millisecond},
		{Process: "a", From: 990 * time.Millisecond, To: 1100 * time.Millisecond},
	}}, Window{From: 0, To: time.Second}, nil, nil, nil)
	if math.Abs(h.StallTimePct-16) > 1e-9 || h.Stalls != 3 || h.StallMaxMS != 110 {
		t.Errorf("stall time %.2f %%, %d stalls, longest %.1f ms; want 16 %%, 3, 110", h.StallTimePct, h.Stalls, h.StallMaxMS)
	}
}

// The processes watched from outside and the user-space links are reported per window,
// and named among the reasons of a window that is not trusted; a watched process with
// a meter of its own (the harness) is judged by its stalls, not its wait.
func TestHostContention(t *testing.T) {
	ms := time.Millisecond
	var recs []workload.Record
	for i := range 100 {
		at := time.Duration(i) * 10 * ms
		recs = append(recs, workload.Record{DC: "D1", Intended: at, Sent: at, Done: at + 5*ms, Outcome: workload.OK})
	}
	w := Window{Name: "before", From: 0, To: time.Second}
	samples := []HostSample{
		{At: 100 * ms, PeriodMS: 100, ProcWaitPct: map[string]float64{"p1": 1, "harness": 3000}, LinkMsgs: 50, LinkLateP99MS: 0.5, LinkLateMaxMS: 2},
		{At: 200 * ms, PeriodMS: 100, ProcWaitPct: map[string]float64{"p1": 9, "harness": 1000}, LinkMsgs: 0, LinkLateP99MS: math.NaN(), LinkLateMaxMS: math.NaN()},
		{At: 300 * ms, PeriodMS: 100, ProcWaitPct: map[string]float64{"harness": 2000}, LinkMsgs: 10, LinkLateP99MS: 1.5, LinkLateMaxMS: 1.5},
		{At: 2 * time.Second, PeriodMS: 100, ProcWaitPct: map[string]float64{"p1": 1000}, LinkMsgs: 5, LinkLateP99MS: 100, LinkLateMaxMS: 100}, // outside
	}
	h := HostVerdict(&HostInput{Processes: []string{"harness"}, Samples: samples}, w, recs, nil, nil)
	if h.Verdict != Trusted || len(h.Reasons) != 0 {
		t.Errorf("%s with %q: p1 waited 0.1 ms per write, the harness is judged by its meter", h.Verdict, h.Reasons)
	}
	if h.ProcWaitPct["p1"] != 5 || h.ProcWaitPct["harness"] != 2000 || len(h.ProcWaitPct) != 2 {
		t.Errorf("mean waits %v, want p1 5, harness 2000", h.ProcWaitPct)
	}
	if h.LinkMsgs != 60 || h.LinkLateMaxMS == nil || *h.LinkLateMaxMS != 2 || *h.LinkLateWorstP99MS != 1.5 {
		t.Errorf("links: %d messages, max %v, worst p99 %v; want 60, 2, 1.5", h.LinkMsgs, h.LinkLateMaxMS, h.LinkLateWorstP99MS)
	}
	stalled := &HostInput{Processes: []string{"harness"}, Samples: samples, Stalls: []HostStall{{Process: "harness", From: 0, To: 450 * ms}}}
	h = HostVerdict(stalled, w, recs, nil, nil)
	if n := len(h.Reasons); h.Verdict != Untrusted || n != 3 || !strings.Contains(h.Reasons[n-2], "harness 2000 %, p1 5 %") || !strings.Contains(h.Reasons[n-1], "up to 2.0 ms") {
		t.Errorf("%s with %q; want untrusted, the effects first, then the harness before p1, then the links", h.Verdict, h.Reasons)
	}
	h = HostVerdict(&HostInput{Stalls: stalled.Stalls}, w, recs, nil, nil)
	if len(h.Reasons) != 1 || h.ProcWaitPct != nil || h.LinkLateMaxMS != nil {
		t.Errorf("nothing watched, no links: %q, %v, %v", h.Reasons, h.ProcWaitPct, h.LinkLateMaxMS)
	}
}
