package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/workload"
)

// TestPrintHostGolden: the run table's host lines for a trusted, a degraded and an
// untrusted window (judged by analysis.HostVerdict from recorded stalls and writes),
// against testdata/host.txt.golden (-update rewrites it).
func TestPrintHostGolden(t *testing.T) {
	ms := time.Millisecond
	// One write a millisecond for 10 s in D1, 20 ms each unless the harness stalled
	// while it was on its way, which holds it to the stall's end.
	window := func(stall time.Duration, every time.Duration, samples []analysis.HostSample) *analysis.HostWindow {
		var stalls []analysis.HostStall
		for at := every; stall > 0 && at < 10*time.Second; at += every {
			stalls = append(stalls, analysis.HostStall{Process: analysis.HarnessProcess, From: at, To: at + stall})
		}
		var recs []workload.Record
		for at := time.Duration(0); at < 10*time.Second; at += ms {
			done := at + 20*ms
			for _, s := range stalls {
				if at < s.To && done > s.From {
					done += s.To - max(at, s.From)
				}
			}
			recs = append(recs, workload.Record{DC: "D1", Server: 1, Intended: at, Sent: at, Done: done, Outcome: workload.OK})
		}
		h := &analysis.HostInput{Processes: []string{analysis.HarnessProcess}, Stalls: stalls, Samples: samples}
		return analysis.HostVerdict(h, analysis.Window{Name: "w", To: 10 * time.Second}, recs, nil, nil)
	}
	var jvm []analysis.HostSample
	for at := 100 * ms; at <= 10*time.Second; at += 100 * ms {
		busy, some := 70.0, 40.0
		jvm = append(jvm, analysis.HostSample{At: at, PeriodMS: 100, CPUBusyPct: busy, CPUSomePct: some, ProcWaitPct: map[string]float64{"p3": 145, "p1": 40}})
	}
	var b bytes.Buffer
	for _, c := range []struct {
		name string
		hw   *analysis.HostWindow
	}{
		{"one 6 ms stall", window(6*ms, 5*time.Second, nil)},
		{"a 40 ms stall every 2 s", window(40*ms, 2*time.Second, nil)},
		{"a 100 ms stall every second, a JVM waiting", window(100*ms, time.Second, jvm)},
	} {
		b.WriteString("# " + c.name + "\n")
		printHost(&b, &analysis.Summary{Host: map[string]*analysis.HostWindow{"before": c.hw}})
	}
	path := filepath.Join("testdata", "host.txt.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("output differs from %s:\n%s", path, b.String())
	}
}
