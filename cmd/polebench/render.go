package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/workload"
)

// printRun prints a repetition's table: measured vs model per DC, before and after the
// crash.
func printRun(w io.Writer, r runner.Repetition) {
	printTable(w, r.Dir, r.Summary, r.Summary.ModelNote, r.Verification)
}

// printTable prints measured vs model per DC, before and after the crash.
func printTable(w io.Writer, dir string, s *analysis.Summary, note string, ver *workload.Verification) {
	fmt.Fprintf(w, "\nrun directory: %s\n", dir)
	lead := fmt.Sprintf("initial leader p%d", s.InitialLeader)
	if s.NewLeader != 0 {
		lead += fmt.Sprintf(", new leader p%d", s.NewLeader)
	}
	if note != "" {
		lead += " (" + note + ")"
	}
	fmt.Fprintln(w, lead)
	if len(s.BehindAtCrash) > 0 {
		var parts []string
		for _, id := range slices.Sorted(maps.Keys(s.BehindAtCrash)) {
			b := s.BehindAtCrash[id]
			parts = append(parts, fmt.Sprintf("p%d %d (%.1f MB)", id, b.Transactions, float64(b.Bytes)/(1<<20)))
		}
		fmt.Fprintf(w, "behind at the crash (acknowledged writes): %s\n", strings.Join(parts, ", "))
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if s.ElectionMS != nil {
		fmt.Fprintf(w, "election %.0f ms (kill to LEADING)", *s.ElectionMS)
	}
	if s.RecoveryMS != nil {
		fmt.Fprintf(w, ", recovery %.1f ms (LEADING to first commit)", *s.RecoveryMS)
	}
	fmt.Fprintln(w)
	printPlaced(w, s)
	fmt.Fprintf(w, "%-8s %-7s %8s %8s %8s %8s %8s %7s\n", "window", "DC", "mean", "model", "p50", "p99", "max", "n")
	for _, win := range windowNames {
		lat := s.LatencyMS[win]
		var dcs []string
		for dc := range lat {
			if dc != analysis.All {
				dcs = append(dcs, dc)
			}
		}
		sort.Strings(dcs)
		for _, dc := range append(dcs, analysis.All) {
			st, ok := lat[dc]
			if !ok {
				continue
			}
			model := "-"
			if st.ModelMS != nil {
				model = fmt.Sprintf("%.1f", *st.ModelMS)
			}
			fmt.Fprintf(w, "%-8s %-7s %8.1f %8s %8.1f %8.1f %8.1f %7d\n", win, dc, st.Mean, model, st.P50, st.P99, st.Max, st.Count)
		}
	}
	if hop := clientHop(dir); hop != "" {
		fmt.Fprintf(w, "clients to servers, a hop the model does not have: %s\n", hop)
	}
	fmt.Fprintf(w, "requests: ok %d, failed %d, unknown %d; achieved %.0f of %.0f req/s; send lag p99 %.2f ms\n",
		s.Requests.OK, s.Requests.Failed, s.Requests.Unknown, s.AchievedRate, s.OfferedRate, s.SendLagMS.P99)
	if ver != nil {
		fmt.Fprintf(w, "verification: %d keys read back from %d servers, %d acknowledged writes lost, linearizability %s\n",
			ver.Keys, len(ver.Servers), ver.LostAcknowledgedWrites, ver.Linearizability)
	}
	printHost(w, s)
	printAnatomy(w, s)
	fmt.Fprintf(w, "plot: %s\n", filepath.Join(dir, "latency.png"))
	if len(s.Anatomy) > 0 {
		fmt.Fprintf(w, "anatomy: %s, %s\n", filepath.Join(dir, "anatomy.png"), filepath.Join(dir, "phases.csv.gz"))
	}
}

// windowNames are a run's windows in their order: before the crash, after the
// election, after a placement controller moved the leader.
var windowNames = []string{"before", "after", "placed"}

// printPlaced says where a placement controller put the leader after the crash, and
// how long the crash to that leader serving took.
func printPlaced(w io.Writer, s *analysis.Summary) {
	if s.PlacedLeader == 0 {
		return
	}
	fmt.Fprintf(w, "placed leader p%d", s.PlacedLeader)
	if s.PlacedServingMS != nil {
		fmt.Fprintf(w, ": serving %.0f ms after the crash", *s.PlacedServingMS)
	}
	if s.TransferMS != nil {
		fmt.Fprintf(w, " (the move to its first commit %.0f ms)", *s.TransferMS)
	} else {
		fmt.Fprint(w, " (Raft's winner kept)")
	}
	fmt.Fprintln(w)
}

// printHost gives each window's verdict: whether its numbers are the system's, or
// partly the host's, and why.
func printHost(w io.Writer, s *analysis.Summary) {
	for _, win := range []string{"before", "after"} {
		h, ok := s.Host[win]
		if !ok {
			continue
		}
		busy := ""
		if h.CPUBusyPct != nil {
			busy = fmt.Sprintf(", CPU %.0f %% busy", *h.CPUBusyPct)
		}
		if h.CPUSomePct != nil {
			busy += fmt.Sprintf(", %.0f %% pressure", *h.CPUSomePct)
		}
		moved := "nothing measured"
		if m := h.Moved(); m != "" {
			moved = m
		}
		fmt.Fprintf(w, "host %-8s %s: the host moved %s; stalls of %s: %d over 1 ms, %d over %g ms, longest %.1f ms, %.2f %% of requests overlapped one of %g ms+%s\n",
			win, strings.ToUpper(h.Verdict), moved, strings.Join(h.Processes, ", "), h.Stalls, h.LongStalls, analysis.StallMS, h.StallMaxMS, h.StalledPct, analysis.StallMS, busy)
		for _, r := range h.Reasons {
			fmt.Fprintf(w, "  %s\n", r)
		}
	}
}

// printAnatomy says per window and DC where the time above the model went.
func printAnatomy(w io.Writer, s *analysis.Summary) {
	if len(s.Anatomy) == 0 {
		return
	}
	cover := ""
	if j := s.AnatomyJoin; j != nil && j.OK > 0 {
		cover = fmt.Sprintf("; %.1f %% of acknowledged writes traced", 100*float64(j.Joined)/float64(j.OK))
	}
	fmt.Fprintf(w, "where the time above the model went (ms%s):\n", cover)
	for _, win := range []string{"before", "after"} {
		for _, dc := range slices.Sorted(maps.Keys(s.Anatomy[win])) {
			st := s.Anatomy[win][dc]
			e := st.ExcessMS
			if dc == analysis.All || e == nil {
				continue
			}
			stall := ""
			if _, ok := st.PhasesMS["host_stall"]; ok {
				stall = fmt.Sprintf(", host stall %.1f", e.HostStall)
			}
			fmt.Fprintf(w, "%-8s %-7s %+.1f ms over model: send lag %.1f, client %.1f, processing %.1f, jitter/in-order %.1f, other %.1f%s\n",
				win, dc, e.Total, e.SendLag, e.Client, e.Processing, e.JitterInOrder, e.Other, stall)
			for _, q := range []string{"p99", "p999"} {
				if t := st.Tail[q]; t != nil {
					fmt.Fprintf(w, "%-16s tail %s: %d writes at %.1f ms or more, mean %.1f = %s\n", "", q, t.Count, t.AtMS, t.MeasuredMS, phaseGroups(t.PhasesMS))
				}
			}
		}
	}
}

// phaseGroups reads the anatomy's phases as the groups a reader acts on: the host's
// stalls (where measured), the harness's send lag and client, poled's processing,
// and the links.
func phaseGroups(ph map[string]float64) string {
	g := fmt.Sprintf("send lag %.1f + client %.1f + processing %.1f + links %.1f",
		ph["send_lag"], analysis.ClientMS(ph), analysis.ProcessingMS(ph), analysis.LinksMS(ph))
	if v, ok := ph["host_stall"]; ok {
		g = fmt.Sprintf("host stall %.1f + %s", v, g)
	}
	return g
}

func printAggregate(w io.Writer, a *analysis.Repetitions) {
	fmt.Fprintf(w, "\n%d repetitions (mean, Student-t 95%% interval):\n", a.N)
	for _, win := range windowNames {
		var dcs []string
		for dc := range a.MeanLatencyMS[win] {
			dcs = append(dcs, dc)
		}
		sort.Strings(dcs)
		for _, dc := range dcs {
			g := a.MeanLatencyMS[win][dc]
			ci := ""
			if g.CI95 != nil {
				ci = fmt.Sprintf(" [%.1f, %.1f]", g.CI95.Low, g.CI95.High)
			}
			fmt.Fprintf(w, "  %-6s %-6s %7.1f ms%s\n", win, dc, g.Mean, ci)
		}
	}
	var leaders []string
	for id, n := range a.NewLeaders {
		leaders = append(leaders, fmt.Sprintf("p%d×%d", id, n))
	}
	sort.Strings(leaders)
	fmt.Fprintf(w, "  new leaders: %s; lost acknowledged writes: %d\n", strings.Join(leaders, " "), a.LostAcknowledgedWrites)
	for _, by := range []struct {
		window string
		runs   map[int]*analysis.LeaderRuns
	}{{"after", a.ByLeader}, {"placed", a.ByPlacedLeader}} {
		for _, id := range slices.Sorted(maps.Keys(by.runs)) {
			l := by.runs[id]
			var parts []string
			for _, dc := range slices.Sorted(maps.Keys(l.MeanLatencyMS)) {
				part := fmt.Sprintf("%s %.1f ms", dc, l.MeanLatencyMS[dc].Mean)
				if m, ok := l.ModelMS[dc]; ok {
					part += fmt.Sprintf(" (model %.1f)", m)
				}
				parts = append(parts, part)
			}
			fmt.Fprintf(w, "  %s, p%d leading (%d runs): %s\n", by.window, id, l.Runs, strings.Join(parts, ", "))
		}
	}
	if a.Host.Measured > 0 { // the simulator has no host to judge
		fmt.Fprintf(w, "  host: %s (runs with every window trusted)\n", a.Host)
	}
}

// clientHop says what the backend measured of the hop from the harness's clients to
// each DC's servers (servers.json's client_rtt_ms: the swarm backend's clients reach
// other machines), or "" when it measured nothing.
func clientHop(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "servers.json"))
	if err != nil {
		return ""
	}
	var f struct{ Servers []cluster.Server }
	if json.Unmarshal(b, &f) != nil {
		return ""
	}
	sum, n := map[string]float64{}, map[string]int{}
	for _, s := range f.Servers {
		if s.ClientRTTms > 0 {
			sum[s.DC] += s.ClientRTTms
			n[s.DC]++
		}
	}
	var parts []string
	for _, dc := range slices.Sorted(maps.Keys(sum)) {
		parts = append(parts, fmt.Sprintf("%s %.2f ms", dc, sum[dc]/float64(n[dc])))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + " RTT (TCP connect, median per server)"
}
