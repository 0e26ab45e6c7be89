// Package runner runs an experiment end to end: it starts the spec's cluster, makes
// sure the initial leader leads, drives the workload, injects the faults, verifies
// every acknowledged write, and leaves one directory per run with the data and the
// analysis (Jepsen's store, one directory per run).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/workload"
)

// Options configure Run.
type Options struct {
	Spec *spec.Spec
	// Out is the run directory; default results/<spec>/<timestamp> with a
	// results/<spec>/latest link to it.
	Out string
	Log *slog.Logger
	// Terminal gets the progress line and the final table; nil: quiet.
	Terminal io.Writer
	// LeaderTimeout bounds the wait for the initial leader (default 60 s).
	LeaderTimeout time.Duration
}

// Result is what Run produced.
type Result struct {
	Dir       string
	Summaries []*analysis.Summary // one per repetition that got as far as analysis
	Aggregate *analysis.Repetitions
}

// Run runs every repetition of the spec. Measured data is written before analysis,
// and an interrupted run (ctx cancelled) still analyses what it measured.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Spec == nil {
		return nil, errors.New("runner: no spec")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.LeaderTimeout <= 0 {
		o.LeaderTimeout = 60 * time.Second
	}
	dir, err := runDir(o.Out, o.Spec.Name)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir}
	if err := writeSpec(dir, o.Spec); err != nil {
		return res, err
	}
	var errs []error
	for rep := 1; rep <= o.Spec.Repetitions; rep++ {
		repDir := dir
		if o.Spec.Repetitions > 1 {
			repDir = filepath.Join(dir, fmt.Sprintf("rep%d", rep))
		}
		if err := os.MkdirAll(repDir, 0o755); err != nil {
			return res, err
		}
		r := &repetition{o: o, n: rep, dir: repDir, log: o.Log.With("rep", rep)}
		sum, err := r.run(ctx)
		if sum != nil {
			res.Summaries = append(res.Summaries, sum)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("repetition %d: %w", rep, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(res.Summaries) > 1 {
		agg, err := analysis.AggregateRuns(res.Summaries)
		if err != nil {
			errs = append(errs, err)
		} else {
			res.Aggregate = agg
			errs = append(errs, writeJSON(filepath.Join(dir, "aggregate.json"), agg))
		}
	}
	if o.Terminal != nil && res.Aggregate != nil {
		printAggregate(o.Terminal, res.Aggregate)
	}
	return res, errors.Join(errs...)
}

// runDir makes the run directory and, for the default location, the latest link.
func runDir(out, spec string) (string, error) {
	if out != "" {
		return out, os.MkdirAll(out, 0o755)
	}
	base := filepath.Join("results", spec)
	dir := filepath.Join(base, time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	latest := filepath.Join(base, "latest")
	os.Remove(latest)
	if err := os.Symlink(filepath.Base(dir), latest); err != nil {
		return "", fmt.Errorf("latest link: %w", err)
	}
	return dir, nil
}

func writeSpec(dir string, s *spec.Spec) error {
	// The spec as written (a file, or a shipped one), then as resolved with overrides.
	b, err := os.ReadFile(s.File)
	if err != nil {
		b, err = spec.Shipped(s.Name)
	}
	if err == nil {
		if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), b, 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, "spec.resolved.json"), s)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// HarnessEvent is something the harness did, on the workload's clock.
type HarnessEvent struct {
	AtMS   float64 `json:"at_ms"`
	Kind   string  `json:"kind"` // KILL, RESTART, LOAD_START, LOAD_END
	Server int     `json:"server,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// repetition is one run of the spec.
type repetition struct {
	o     Options
	n     int
	dir   string
	log   *slog.Logger
	start time.Time

	mu      sync.Mutex
	harness []HarnessEvent
	nodes   map[int][]replica.Event // latest copy of each node's timeline
}

func (r *repetition) note(kind string, server int, err error) {
	r.noteAt(time.Now(), kind, server, err)
}

// noteAt records what the harness did at t: a kill is dated when it was issued, not
// when the backend confirmed it (a container takes some 100 ms to die).
func (r *repetition) noteAt(t time.Time, kind string, server int, err error) {
	e := HarnessEvent{AtMS: ms(t.Sub(r.start)), Kind: kind, Server: server}
	if err != nil {
		e.Error = err.Error()
	}
	r.mu.Lock()
	r.harness = append(r.harness, e)
	r.mu.Unlock()
}

func (r *repetition) run(ctx context.Context) (*analysis.Summary, error) {
	spec := r.o.Spec
	topo, err := spec.Topology()
	if err != nil {
		return nil, err
	}
	seed := spec.Seed + uint64(r.n) - 1
	plan := spec.Plan(topo, seed)
	if err := netem.WritePlan(filepath.Join(r.dir, "links.json"), plan); err != nil {
		return nil, err
	}
	r.progress("starting %s cluster (%d servers)", spec.Backend, topo.N())
	// The label marks what the backend creates, for `polebench cluster down LABEL`.
	label := fmt.Sprintf("r%07d", time.Now().UnixNano()/1000%1e7)
	cl, err := cluster.New(ctx, spec.Backend, cluster.Options{
		Topology: topo, Oracle: spec.Oracle, InitialLeader: spec.InitialLeader, Plan: plan,
		DataRoot: filepath.Join(r.dir, "data"), PreloadMB: spec.PreloadMB, Label: label, Logger: r.log,
	})
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	r.nodes = map[int][]replica.Event{}
	defer func() {
		// The cluster goes away whatever happened, with a context of its own: the
		// caller's may be cancelled (Ctrl-C).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		logs := filepath.Join(r.dir, "logs")
		os.MkdirAll(logs, 0o755)
		if err := cl.CollectLogs(cctx, logs); err != nil {
			r.log.Warn("collect logs", "err", err)
		}
		if err := cl.Close(cctx); err != nil {
			r.log.Warn("close cluster", "err", err)
		}
		os.RemoveAll(filepath.Join(r.dir, "data"))
	}()
	servers := cl.Servers()
	if err := writeJSON(filepath.Join(r.dir, "servers.json"), map[string]any{"servers": servers, "links": cl.Links(), "backend": spec.Backend, "label": label}); err != nil {
		return nil, err
	}

	lctx, cancel := context.WithTimeout(ctx, r.o.LeaderTimeout)
	leader, err := cluster.WaitLeader(lctx, servers, cl.Alive)
	if err == nil {
		err = cluster.WaitServing(lctx, servers, cl.Alive)
	}
	cancel()
	if err != nil {
		return nil, fmt.Errorf("waiting for the initial leader p%d: %w", spec.InitialLeader, err)
	}
	if leader != spec.InitialLeader {
		return nil, fmt.Errorf("the cluster elected p%d first, but the spec's initial leader is p%d: the run would not measure what the spec describes", leader, spec.InitialLeader)
	}
	r.progress("p%d leads; preparing the workload", leader)

	var wservers []workload.Server
	for _, s := range servers {
		wservers = append(wservers, workload.Server{ID: s.ID, DC: s.DC, Addr: s.Client})
	}
	w, err := workload.New(workload.Config{
		Servers: wservers, Rates: spec.RatesByDC(), Arrival: workload.Arrival(spec.Workload.Arrival),
		Seed: seed, Duration: spec.Duration, PayloadBytes: spec.Workload.PayloadBytes, Keys: spec.Workload.Keys,
		SessionsPerServer: spec.Workload.SessionsPerServer,
		RecordsPath:       filepath.Join(r.dir, "requests.csv.gz"), Log: r.log.With("part", "workload"),
	})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := w.Prepare(ctx); err != nil {
		return nil, fmt.Errorf("prepare workload: %w", err)
	}

	r.start = time.Now()
	r.note("LOAD_START", 0, nil)
	runCtx, stopFaults := context.WithCancel(ctx)
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		r.faults(runCtx, cl, w, servers)
	}()
	progDone := make(chan struct{})
	go func() {
		defer close(progDone)
		r.progressLoop(runCtx, w)
	}()
	wres, werr := w.RunFrom(ctx, r.start)
	r.note("LOAD_END", 0, werr)
	stopFaults()
	<-faultsDone
	<-progDone
	r.endProgress()
	if wres == nil {
		return nil, fmt.Errorf("workload: %w", werr)
	}

	// Everything below works with a fresh context: an interrupted run still keeps
	// and analyses what it measured.
	actx, cancelA := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancelA()
	r.collectEvents(actx, servers, cl.Alive)
	if err := r.writeEvents(); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(r.dir, "rtts.json"), r.measuredRTTs(actx, servers, cl.Alive)); err != nil {
		return nil, err
	}
	ver, verr := workload.Verify(actx, w.VerifyConfig(), wres.Records)
	if ver != nil {
		if err := writeJSON(filepath.Join(r.dir, "verification.json"), ver); err != nil {
			return nil, err
		}
	}

	ev := r.analysisEvents()
	model, newLeaderModel := r.model(ev)
	in := analysis.Input{Records: wres.Records, Events: ev, Model: model, OfferedRate: spec.Rates.Total}
	if ver != nil {
		in.LostAcknowledgedWrites = ver.LostAcknowledgedWrites
	}
	title := fmt.Sprintf("%s: %s oracle, p%d killed at %v", spec.Name, spec.Oracle.Name, spec.InitialLeader, spec.CrashAt)
	sum, _, aerr := analysis.Report(r.dir, in, 500*time.Millisecond, analysis.PlotOptions{Title: title, YMaxMS: yClip(model)})
	if aerr != nil {
		return nil, errors.Join(werr, verr, fmt.Errorf("analysis: %w", aerr))
	}
	if r.o.Terminal != nil {
		printTable(r.o.Terminal, r.dir, sum, newLeaderModel, ver)
	}
	var errs []error
	if werr != nil {
		errs = append(errs, fmt.Errorf("workload: %w", werr))
	}
	if verr != nil {
		errs = append(errs, fmt.Errorf("verification: %w", verr))
	} else if err := ver.Err(); err != nil {
		errs = append(errs, fmt.Errorf("verification: %w", err))
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("interrupted at %v: what was measured is in %s", time.Since(r.start).Round(time.Second), r.dir))
	}
	return sum, errors.Join(errs...)
}

// faults runs the spec's kill / restart schedule on the workload's clock.
func (r *repetition) faults(ctx context.Context, cl cluster.Cluster, w *workload.Workload, servers []cluster.Server) {
	byID := map[int]cluster.Server{}
	for _, s := range servers {
		byID[s.ID] = s
	}
	for _, f := range r.o.Spec.FaultSchedule() {
		select {
		case <-time.After(time.Until(r.start.Add(f.At))):
		case <-ctx.Done():
			return
		}
		switch {
		case f.Kill != 0:
			// Keep the victim's timeline: it is gone once the server is.
			r.fetchEvents(ctx, byID[f.Kill])
			issued := time.Now()
			err := cl.Kill(ctx, f.Kill)
			r.noteAt(issued, "KILL", f.Kill, err)
			w.ServerDown(f.Kill)
			r.log.Info("killed", "server", f.Kill, "err", err)
		case f.Restart != 0:
			err := cl.Restart(ctx, f.Restart)
			r.note("RESTART", f.Restart, err)
			r.log.Info("restarted", "server", f.Restart, "err", err)
			if err == nil {
				go r.whenServing(ctx, byID[f.Restart], func() { w.ServerUp(f.Restart) })
			}
		}
	}
}

// whenServing calls f once s answers srvr with a mode (it rejoined the ensemble).
func (r *repetition) whenServing(ctx context.Context, s cluster.Server, f func()) {
	if err := cluster.WaitServing(ctx, []cluster.Server{s}, nil); err == nil {
		r.note("SERVING", s.ID, nil)
		f()
	}
}

func (r *repetition) fetchEvents(ctx context.Context, s cluster.Server) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ev, err := cluster.NodeEvents(ctx, s)
	if err != nil {
		return
	}
	r.mu.Lock()
	// A restarted node starts a new timeline: keep what the earlier life said.
	old := r.nodes[s.ID]
	for _, e := range old {
		if len(ev) == 0 || e.TimeNS < ev[0].TimeNS {
			ev = append(ev, e)
		}
	}
	slices.SortStableFunc(ev, func(a, b replica.Event) int { return int(a.TimeNS - b.TimeNS) })
	r.nodes[s.ID] = dedupe(ev)
	r.mu.Unlock()
}

func dedupe(ev []replica.Event) []replica.Event {
	out := ev[:0]
	for i, e := range ev {
		if i > 0 && e == ev[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}

func (r *repetition) collectEvents(ctx context.Context, servers []cluster.Server, alive func(int) bool) {
	for _, s := range servers {
		if alive(s.ID) {
			r.fetchEvents(ctx, s)
		}
	}
}

// eventRecord is one line of events.jsonl: a harness or a node event.
type eventRecord struct {
	AtMS float64 `json:"at_ms"`
	replica.Event
	Source string `json:"source"` // harness | node
	Error  string `json:"error,omitempty"`
}

func (r *repetition) writeEvents() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []eventRecord
	for _, h := range r.harness {
		all = append(all, eventRecord{AtMS: h.AtMS, Event: replica.Event{Kind: h.Kind, Server: h.Server}, Source: "harness", Error: h.Error})
	}
	for _, evs := range r.nodes {
		for _, e := range evs {
			all = append(all, eventRecord{AtMS: ms(e.Time().Sub(r.start)), Event: e, Source: "node"})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].AtMS < all[j].AtMS })
	f, err := os.Create(filepath.Join(r.dir, "events.jsonl"))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, e := range all {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// analysisEvents finds the run's instants: the crash of the initial leader, and the
// new leader's LEADING and first commit after it. The new leader is the server whose
// first commit comes first after the crash; LEADING is its last one before that.
func (r *repetition) analysisEvents() analysis.Events {
	spec := r.o.Spec
	ev := analysis.Events{WarmupEnd: spec.Workload.Warmup, End: spec.Duration, InitialLeader: spec.InitialLeader}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.harness {
		if h.Kind == "KILL" && h.Server == spec.InitialLeader && spec.CrashAt > 0 && ev.Crash == 0 {
			ev.Crash = time.Duration(h.AtMS * float64(time.Millisecond))
		}
	}
	if ev.Crash == 0 {
		return ev
	}
	crash := r.start.Add(ev.Crash).UnixNano()
	var first *replica.Event
	for _, evs := range r.nodes {
		for i := range evs {
			e := &evs[i]
			if e.Kind == "FIRST_COMMIT" && e.TimeNS > crash && (first == nil || e.TimeNS < first.TimeNS) {
				first = e
			}
		}
	}
	if first == nil {
		return ev
	}
	ev.NewLeader = first.Server
	ev.FirstCommit = first.Time().Sub(r.start)
	for _, e := range r.nodes[first.Server] {
		if e.Kind == "LEADING" && e.TimeNS > crash && e.TimeNS <= first.TimeNS {
			ev.Leading = e.Time().Sub(r.start)
		}
	}
	ev.Elected = ev.Leading
	// What each server proposed in the election that chose the new leader: its last
	// ELECTION between the crash and that leader's LEADING.
	until := r.start.Add(ev.Leading).UnixNano()
	for id, evs := range r.nodes {
		for _, e := range evs {
			if e.Kind == "ELECTION" && e.TimeNS > crash && e.TimeNS <= until {
				if ev.ElectionZxids == nil {
					ev.ElectionZxids = map[int]uint64{}
				}
				ev.ElectionZxids[id] = e.Zxid
			}
		}
	}
	return ev
}

// model is the analytic prediction for this run: before the crash with the initial
// leader, after it with the leader actually elected (so measured and predicted
// compare like with like), and a note on whom the model elects. Keys are DC names
// and analysis.All.
func (r *repetition) model(ev analysis.Events) (map[string]map[string]float64, string) {
	pred, err := r.o.Spec.Model()
	if err != nil {
		r.log.Warn("no model prediction", "err", err)
		return nil, ""
	}
	// A DC without load has no measurement to sit beside.
	rates := r.o.Spec.RatesByDC()
	m := map[string]map[string]float64{"before": {analysis.All: pred.Before.Mean}}
	for dc, v := range pred.Before.LatencyByDC {
		if rates[dc] > 0 {
			m["before"][dc] = v
		}
	}
	note := ""
	for _, e := range pred.Elections {
		if e.Oracle != r.o.Spec.Oracle.Name {
			continue
		}
		note = fmt.Sprintf("model elects p%d with %s", e.Leader, e.Oracle)
		// The model takes the servers as in sync; elect again with the zxids they proposed.
		if e.Oracle == score.History && len(ev.ElectionZxids) > 0 {
			if got, err := pred.After.Elect(score.Oracle{Name: score.History}, 0, ev.ElectionZxids); err == nil && got.Leader != e.Leader {
				note += "; " + aheadNote(ev.ElectionZxids, got.Leader)
			}
		}
	}
	if ev.NewLeader != 0 && r.o.Spec.CrashAt > 0 {
		if c, ok := pred.After.Candidate(ev.NewLeader); ok {
			m["after"] = map[string]float64{analysis.All: c.Mean}
			for dc, v := range c.LatencyByDC {
				if rates[dc] > 0 {
					m["after"][dc] = v
				}
			}
		}
	}
	return m, note
}

// aheadNote explains a history winner other than the model's: proposals in flight
// when the leader died reach some followers and not others (as with ZooKeeper), and
// the one ahead must win.
func aheadNote(zxids map[int]uint64, winner int) string {
	ids := slices.Sorted(maps.Keys(zxids))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("p%d %#x", id, zxids[id])
	}
	return fmt.Sprintf("p%d was ahead at the crash (%s), so history picks it", winner, strings.Join(parts, ", "))
}

// measuredRTTs is what each live server's heartbeat monitor measured, beside the plan.
func (r *repetition) measuredRTTs(ctx context.Context, servers []cluster.Server, alive func(int) bool) map[string]any {
	out := map[string]any{}
	for _, s := range servers {
		if !alive(s.ID) {
			continue
		}
		st, err := cluster.NodeStatus(ctx, s)
		if err != nil {
			continue
		}
		peers := map[string]float64{}
		for _, p := range st.Peers {
			if p.Alive {
				peers[fmt.Sprintf("p%d", p.ID)] = p.RTTms
			}
		}
		out[fmt.Sprintf("p%d", s.ID)] = peers
	}
	return out
}

// yClip keeps the crash spike from flattening the steady state: three times the
// slowest predicted DC, at least 100 ms.
func yClip(model map[string]map[string]float64) float64 {
	top := 0.0
	for _, dcs := range model {
		for _, v := range dcs {
			top = max(top, v)
		}
	}
	return max(100, 3*top)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// progress prints a status line on the terminal.
func (r *repetition) progress(format string, a ...any) {
	if r.o.Terminal == nil {
		return
	}
	fmt.Fprintf(r.o.Terminal, "\r\033[K[%s rep %d/%d] %s", r.o.Spec.Name, r.n, r.o.Spec.Repetitions, fmt.Sprintf(format, a...))
}

func (r *repetition) endProgress() {
	if r.o.Terminal != nil {
		fmt.Fprintln(r.o.Terminal)
	}
}

func (r *repetition) progressLoop(ctx context.Context, w *workload.Workload) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	spec := r.o.Spec
	var lastDone int64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ok, failed, unknown := w.Progress()
			done := ok + failed + unknown
			rate := float64(done-lastDone) / now.Sub(last).Seconds()
			lastDone, last = done, now
			el := now.Sub(r.start)
			phase := "before crash"
			switch {
			case el < spec.Workload.Warmup:
				phase = "warm-up"
			case spec.CrashAt > 0 && el >= spec.CrashAt:
				phase = "after crash"
			}
			r.progress("%-12s %5.1fs / %v  %6.0f req/s  ok %d  failed %d  unknown %d",
				phase, el.Seconds(), spec.Duration, rate, ok, failed, unknown)
		}
	}
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
	if s.ElectionMS != nil {
		fmt.Fprintf(w, "election %.0f ms (kill to LEADING)", *s.ElectionMS)
	}
	if s.RecoveryMS != nil {
		fmt.Fprintf(w, ", recovery %.1f ms (LEADING to first commit)", *s.RecoveryMS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-8s %-7s %8s %8s %8s %8s %8s %7s\n", "window", "DC", "mean", "model", "p50", "p99", "max", "n")
	for _, win := range []string{"before", "after"} {
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
	fmt.Fprintf(w, "requests: ok %d, failed %d, unknown %d; achieved %.0f of %.0f req/s; send lag p99 %.2f ms\n",
		s.Requests.OK, s.Requests.Failed, s.Requests.Unknown, s.AchievedRate, s.OfferedRate, s.SendLagMS.P99)
	if ver != nil {
		fmt.Fprintf(w, "verification: %d keys read back from %d servers, %d acknowledged writes lost, linearizability %s\n",
			ver.Keys, len(ver.Servers), ver.LostAcknowledgedWrites, ver.Linearizability)
	}
	fmt.Fprintf(w, "plot: %s\n", filepath.Join(dir, "latency.png"))
}

func printAggregate(w io.Writer, a *analysis.Repetitions) {
	fmt.Fprintf(w, "\n%d repetitions (mean, Student-t 95%% interval):\n", a.N)
	for _, win := range []string{"before", "after"} {
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
}
