package trial

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/polebench/polebench/hiccup"
)

// TestHostInputAsStored: what Derive gives the analysis of a host is what the store's
// files read back give it, to the rounding the files have, so that a run analysed live
// and its stored copy agree.
func TestHostInputAsStored(t *testing.T) {
	start := time.Unix(1700000000, 123456789)
	at := func(d time.Duration) int64 { return start.Add(d).UnixNano() }
	life := func(p string, from, to time.Duration, stalls ...hiccup.Stall) hiccup.Report {
		return hiccup.Report{Process: p, From: at(from), To: at(to), Interval: int64(time.Millisecond), Threshold: int64(5 * time.Millisecond), Stalls: stalls}
	}
	for _, c := range []struct {
		name string
		host *Host
	}{
		{"nothing measured", &Host{Start: start}},
		{"stalls in two lives and samples with gaps", &Host{Start: start,
			Reports: map[string][]hiccup.Report{
				"p2":      {life("p2", 0, time.Second, hiccup.Stall{Start: at(1234567), Len: 7654321}), life("p2", 2*time.Second, 3*time.Second)},
				"harness": {life("harness", -time.Millisecond, 3*time.Second, hiccup.Stall{Start: at(-1), Len: 1}, hiccup.Stall{Start: at(2999999999), Len: 5000001})},
			},
			Samples: []hiccup.HostSample{
				{At: at(100 * time.Millisecond), PeriodMS: 100.004, CPUBusyPct: 12.345, CPUSomePct: math.NaN(), GCPauseMS: 0.125, GCCPUMS: 3,
					ProcWaitPct: map[string]float64{"harness": 1.005}, LinkMsgs: 42, LinkLateP99MS: math.NaN(), LinkLateMaxMS: 0.3333},
				{At: at(200*time.Millisecond + 1), PeriodMS: 99.996, CPUBusyPct: math.NaN(), CPUSomePct: 0,
					ProcWaitPct: map[string]float64{"harness": 0, "p2": math.NaN(), "p3": 250}, LinkLateP99MS: 1e-9, LinkLateMaxMS: 1e9},
			}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			live, err := hostInput(c.host)
			if err != nil {
				t.Fatal(err)
			}
			s := &Store{dir: t.TempDir()}
			if err := s.writeHost(c.host); err != nil {
				t.Fatal(err)
			}
			stored, err := readHost(s.dir)
			if err != nil {
				t.Fatal(err)
			}
			// %v, as NaN is never equal to itself.
			if l, st := fmt.Sprintf("%+v", *live), fmt.Sprintf("%+v", *stored); l != st {
				t.Errorf("live\n %s\nstored\n %s", l, st)
			}
		})
	}
}
