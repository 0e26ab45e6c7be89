package runner

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/polebench/polebench/analysis"
)

// checkAnatomy: the servers' traces cover most of the run's acknowledged writes (a
// killed leader's last marks, between the harness's last read of its trace and the
// kill, are lost: a few percent on a quiet host, more on a busy one; the nightly suite
// watches the coverage), each write's phases are in order (no
// phase below zero: every process and container reads one clock), and per window and
// DC the phases' means add up, within 0.1 ms, to the mean latency of the writes traced,
// and the parts of the excess over the model to the excess.
func checkAnatomy(t *testing.T, dir string, sum *analysis.Summary) {
	t.Helper()
	if j := sum.AnatomyJoin; j == nil || j.OK == 0 || float64(j.Joined) < 0.5*float64(j.OK) {
		t.Errorf("traces joined %+v: want most of the acknowledged writes", sum.AnatomyJoin)
	}
	paths, err := analysis.ReadPaths(filepath.Join(dir, "phases.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	negative := 0
	for i := range paths {
		for k, ph := range analysis.Phases {
			if d := paths[i].Phase(k); d < 0 {
				if negative++; negative <= 5 {
					t.Errorf("write %d (p%d, leader p%d): phase %s is %v", paths[i].ID, paths[i].Server, paths[i].Leader, ph.Name, d)
				}
			}
		}
	}
	if negative > 0 {
		t.Errorf("%d negative phases in %d writes", negative, len(paths))
	}
	for _, w := range []string{"before", "after"} {
		for dc, lat := range sum.LatencyMS[w] {
			a, ok := sum.Anatomy[w][dc]
			if !ok {
				t.Errorf("%s %s: no anatomy", w, dc)
				continue
			}
			phases := a.PhasesMS["host_stall"] // the host's, taken out of the phases it fell in
			for _, ph := range analysis.Phases {
				phases += a.PhasesMS[ph.Name]
			}
			if d := phases - a.MeasuredMS; math.Abs(d) > 0.1 {
				t.Errorf("%s %s: phases add up to %.3f ms, the traced writes' mean is %.3f ms (off by %+.3f)", w, dc, phases, a.MeasuredMS, d)
			}
			if e := a.ExcessMS; e == nil {
				t.Errorf("%s %s: no split of the excess over the model", w, dc)
			} else if parts := e.SendLag + e.Client + e.Processing + e.JitterInOrder + e.Other + e.HostStall; math.Abs(parts-e.Total) > 1e-6 {
				t.Errorf("%s %s: excess parts add up to %.3f, excess %.3f", w, dc, parts, e.Total)
			}
			t.Logf("%s %-3s measured %6.2f (traced %6.2f = phases %6.2f); model %6.2f; excess %+.2f: send lag %.2f, client %.2f, processing %.2f, jitter/in-order %.2f, other %.2f, host stall %.2f",
				w, dc, lat.Mean, a.MeasuredMS, phases, a.ModelMS.Total, a.ExcessMS.Total, a.ExcessMS.SendLag, a.ExcessMS.Client,
				a.ExcessMS.Processing, a.ExcessMS.JitterInOrder, a.ExcessMS.Other, a.ExcessMS.HostStall)
		}
	}
}
