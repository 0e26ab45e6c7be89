package nightly

import (
	"context"
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
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// Options configure Run.
type Options struct {
	// Out is the night's directory: one directory per entry, bench.json and
	// fidelity.md. It must not exist or be empty.
	Out string
	Log *slog.Logger
	// Progress gets a status line, a line per finished entry, the fidelity table and
	// a last line naming the entries that were inconclusive or skipped; nil: quiet.
	Progress io.Writer
	// Version is the polebench version recorded in bench.json.
	Version string
	// Strict makes a skipped entry an error of the night: where everything the
	// suite needs is installed (CI, after make deps), a skip is a defect.
	Strict bool
}

// FidelityFile is the night's fidelity report, beside bench.json.
const FidelityFile = "fidelity.md"

// Run runs every entry of the suite in order, writes Out/bench.json from the entries'
// directories with each entry's fidelity verdict, and Out/fidelity.md. An entry this
// machine cannot run (for want of root, Docker or Java) is skipped, saying what is
// missing; one whose backend can make the machine ready (a swarm manager) is made
// ready for it and the machine put back after it. A failed entry does not stop the
// others. The error joins the entries' errors, names the entries that missed their
// fidelity goal with confidence, and (Strict) the skipped ones; an inconclusive
// verdict is no error.
func Run(ctx context.Context, s *Suite, o Options) (*benchdata.File, error) {
	if o.Out == "" {
		return nil, errors.New("nightly: no output directory")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("nightly: %s is not empty; give a new --out", o.Out)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("nightly: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, "suite.yaml"), s.Text, 0o644); err != nil {
		return nil, fmt.Errorf("nightly: %w", err)
	}
	line := progress.New(o.Progress)
	total := s.Planned()
	line.Note("suite %s%s: %d entries, about %v planned%s", s.Name, map[bool]string{true: " --quick"}[s.Quick], len(s.Entries),
		roughly(total), plantedNote(s))
	// What this machine lacks is said before anything runs, not after an hour.
	skipped := map[string]error{}
	for i, e := range s.Entries {
		switch err := kinds[e.Kind].check(ctx, e); {
		case err == nil:
		case errors.Is(err, cluster.ErrUnprepared):
			line.Note("[%d/%d %s] the machine is made ready for it at its turn: %v", i+1, len(s.Entries), e.Name, err)
		default:
			skipped[e.Name] = err
			line.Note("[%d/%d %s] will be skipped: this machine cannot run it: %v", i+1, len(s.Entries), e.Name, err)
		}
	}
	start := time.Now()
	var done time.Duration // planned time of the finished entries
	var errs []error
	failed := map[string]error{}
	for i, e := range s.Entries {
		label := fmt.Sprintf("[%d/%d %s]", i+1, len(s.Entries), e.Name)
		release := func(context.Context) error { return nil }
		if skipped[e.Name] == nil {
			release, skipped[e.Name] = prepare(ctx, e, label, line)
		}
		if err := skipped[e.Name]; err != nil {
			line.Note("%s skipped: this machine cannot run it: %v", label, err)
			total -= e.Planned()
			continue
		}
		line.Note("%s %s, about %v (%s)", label, describe(e), e.Planned().Round(time.Second), e.Pos)
		entryStart := time.Now()
		stop := make(chan struct{})
		ticked := make(chan struct{})
		go func() {
			defer close(ticked)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					cur := min(now.Sub(entryStart), e.Planned())
					el := now.Sub(start)
					line.Update("%s %v elapsed, about %v left", label, el.Round(time.Second), progress.ETA((done+cur).Seconds(), total.Seconds(), el))
				}
			}
		}()
		dir := filepath.Join(o.Out, e.Name)
		err := kinds[e.Kind].run(ctx, e, dir, runEnv{log: o.Log.With("experiment", e.Name), line: line})
		close(stop)
		<-ticked
		done += e.Planned()
		if err != nil {
			failed[e.Name] = err
			errs = append(errs, fmt.Errorf("%s (%s): %w", e.Name, e.Pos, err))
			line.Note("%s failed after %v: %v", label, time.Since(entryStart).Round(time.Second), err)
		} else {
			line.Note("%s done in %v: %s", label, time.Since(entryStart).Round(time.Second), dir)
		}
		// The machine goes back as it was, also when the night is interrupted.
		if err := release(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): putting the machine back: %w", e.Name, e.Pos, err))
			line.Note("%s could not put the machine back: %v", label, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	line.Done()
	f, err := collect(o.Out, s)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	links := f.Env.Links
	f.Env = benchdata.HostEnv(context.WithoutCancel(ctx), o.Version)
	f.Env.Links, f.Env.Suite, f.Env.Quick = links, s.Name, s.Quick
	for _, st := range s.Planted {
		f.Env.Planted = append(f.Env.Planted, st.String())
	}
	for _, e := range s.Entries {
		fd := e.Goal.Judge(f, e.Name)
		fd.Kind, fd.Backend = e.Kind, e.Where()
		fd.Host = hostVerdict(filepath.Join(o.Out, e.Name))
		switch {
		case skipped[e.Name] != nil:
			fd.Verdict, fd.Checks = benchdata.FidelitySkipped, nil
			fd.Note = "this machine cannot run it: " + firstLine(skipped[e.Name].Error())
			if o.Strict {
				errs = append(errs, fmt.Errorf("%s (%s): skipped: %w", e.Name, e.Pos, skipped[e.Name]))
			}
		case failed[e.Name] != nil && fd.Verdict == benchdata.FidelityNoData:
			fd.Note = "the entry failed: " + firstLine(failed[e.Name].Error())
		}
		f.Fidelity = append(f.Fidelity, fd)
	}
	if err := f.WriteFile(filepath.Join(o.Out, benchdata.FileName)); err != nil {
		errs = append(errs, err)
	}
	if err := writeFidelity(filepath.Join(o.Out, FidelityFile), f); err != nil {
		errs = append(errs, err)
	}
	line.Note("%s: %d metrics from %d entries in %v", filepath.Join(o.Out, benchdata.FileName), len(f.Metrics), len(s.Entries), time.Since(start).Round(time.Second))
	if o.Progress != nil {
		fmt.Fprintln(o.Progress, "\nfidelity (met, MISSED or inconclusive, by each check's rule; regression is `polebench compare`):")
		benchdata.WriteFidelityText(o.Progress, f.Fidelity)
	}
	if m := benchdata.FidelityMisses(f.Fidelity); len(m) > 0 {
		errs = append(errs, fmt.Errorf("fidelity goal missed by %s (see %s)", strings.Join(m, ", "), filepath.Join(o.Out, FidelityFile)))
	}
	if o.Progress != nil {
		fmt.Fprintln(o.Progress, LastLine(f.Fidelity))
	}
	return f, errors.Join(errs...)
}

// prepare readies the machine for entry e where its kind can (the note says what it
// did), and checks it again: release puts the machine back; an error says why e
// cannot run, after the machine was put back.
func prepare(ctx context.Context, e Entry, label string, line *progress.Line) (release func(context.Context) error, err error) {
	k := kinds[e.Kind]
	release = func(context.Context) error { return nil }
	if k.prepare != nil {
		note, r, err := k.prepare(ctx, e)
		if err != nil {
			return release, err
		}
		if note != "" {
			line.Note("%s %s", label, note)
		}
		release = r
	}
	if err := k.check(ctx, e); err != nil {
		return release, errors.Join(err, release(context.WithoutCancel(ctx)))
	}
	return release, nil
}

// LastLine sums the night's verdicts up in the line that ends its output: how many
// entries met, missed, were inconclusive, skipped or without data, naming all but
// those that met.
func LastLine(fs []benchdata.Fidelity) string {
	var parts []string
	byVerdict := map[string][]string{}
	for _, fd := range fs {
		byVerdict[fd.Verdict] = append(byVerdict[fd.Verdict], fd.Entry)
	}
	for _, v := range []string{benchdata.FidelityMet, benchdata.FidelityNoGoal, benchdata.FidelityMissed, benchdata.FidelityNoData, benchdata.FidelityInconclusive, benchdata.FidelitySkipped} {
		names := byVerdict[v]
		switch {
		case len(names) == 0:
		case v == benchdata.FidelityMet || v == benchdata.FidelityNoGoal:
			parts = append(parts, fmt.Sprintf("%d %s", len(names), v))
		default:
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(names), v, strings.Join(names, ", ")))
		}
	}
	return "night: " + strings.Join(parts, "; ")
}

// roughly rounds a planned time to what an estimate is worth.
func roughly(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}

func plantedNote(s *Suite) string {
	if len(s.Planted) == 0 {
		return ""
	}
	return "; PLANTED on every run entry: --set " + settingsString(s.Planted)
}

func describe(e Entry) string {
	switch e.Kind {
	case KindRun:
		return fmt.Sprintf("%s on %s, %d × %v", e.Resolved.Name, e.Where(), e.Resolved.Repetitions, e.Resolved.Duration)
	case KindSimInstructions:
		return fmt.Sprintf("the simulator's instructions on %s (%s), 1 × %v", e.Resolved.Name, e.Where(), e.Resolved.Duration)
	case KindSimSpeed:
		return fmt.Sprintf("the simulator's speed on %s (%s), %d × %v", e.Resolved.Name, e.Where(), e.Resolved.Repetitions, e.Resolved.Duration)
	case KindKazoo:
		return fmt.Sprintf("kazoo's suite (%d modules) on %s", len(e.Kazoo.Modules), e.Where())
	}
	return fmt.Sprintf("write benchmark on %s, %d windows of %v", e.Where(), e.Load.Repetitions, e.Load.Duration)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// collect builds the night's benchdata.File: the run entries' directories through
// benchdata.Collect, and each other entry's own bench.json with its metrics put under the
// entry's name.
func collect(out string, s *Suite) (*benchdata.File, error) {
	f := &benchdata.File{Format: benchdata.FormatVersion, Metrics: []benchdata.Metric{}}
	if slices.ContainsFunc(s.Entries, func(e Entry) bool {
		return e.Kind == KindRun && exists(filepath.Join(out, e.Name, "spec.resolved.json"))
	}) {
		var err error
		if f, err = benchdata.CollectWith(out, writtenModel(out, s)); err != nil {
			return nil, err
		}
	}
	for _, e := range s.Entries {
		p := filepath.Join(out, e.Name, benchdata.FileName)
		if e.Kind == KindRun || !exists(p) {
			continue
		}
		bf, err := benchdata.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, m := range bf.Metrics {
			switch {
			case e.Kind == KindBench && strings.HasSuffix(m.Name, ".writes_per_s") && len(m.Samples) < e.Load.Repetitions:
				f.Incomplete = append(f.Incomplete, fmt.Sprintf("%s/%s: %d of %d windows", e.Name, strings.TrimSuffix(m.Name, ".writes_per_s"), len(m.Samples), e.Load.Repetitions))
			case e.Kind == KindSimSpeed && len(m.Samples) < e.Resolved.Repetitions:
				f.Incomplete = append(f.Incomplete, fmt.Sprintf("%s/%s: %d of %d repetitions", e.Name, m.Name, len(m.Samples), e.Resolved.Repetitions))
			}
			m.Name = e.Name + "/" + m.Name
			f.Metrics = append(f.Metrics, m)
		}
	}
	sort.Slice(f.Metrics, func(i, j int) bool { return f.Metrics[i].Name < f.Metrics[j].Name })
	return f, nil
}

// writtenModel is a planted night's model for each repetition under out: that of its
// entry's spec as the suite wrote it (Entry.Written), so that the planted setting
// moves the measurement and not the model, as a regression of the system under study
// would; nil on a night with nothing planted.
func writtenModel(out string, s *Suite) benchdata.ModelFunc {
	if len(s.Planted) == 0 {
		return nil
	}
	written := map[string]*spec.Spec{}
	for _, e := range s.Entries {
		if e.Written != nil {
			written[e.Name] = e.Written
		}
	}
	return func(repDir string) (map[string]map[string]float64, error) {
		rel, err := filepath.Rel(out, repDir)
		if err != nil {
			return nil, fmt.Errorf("nightly: %w", err)
		}
		name, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if sp := written[name]; sp != nil {
			return trial.Model(repDir, sp)
		}
		return nil, nil
	}
}

// writeFidelity writes fidelity.md: the night, the table, and every check.
func writeFidelity(path string, f *benchdata.File) error {
	var b strings.Builder
	b.WriteString("# Fidelity of the night\n\n")
	fmt.Fprintf(&b, "%s\n\n", benchdata.EnvLine(f.Env))
	b.WriteString("Each check is met when the night's evidence puts it inside the goal, MISSED only when it puts it outside, and inconclusive otherwise; " +
		"its `rule` says which: a measured−model mean by its 95 % Student-t interval over the windows the host trusted (inconclusive with fewer than two), " +
		"a writes/s ratio by a Mann-Whitney test of poled's windows against the goal times ZooKeeper's, a trend by Mann-Kendall. " +
		"An entry misses when a check missed, is inconclusive when one was, and meets its goal when every check did. " +
		"`host` is the hiccup meter's verdicts on the entry's windows (docs/host.md; simulated runs and benchmarks have none): where it was measured, only trusted windows are judged. " +
		"Regression against earlier nights is `polebench compare`'s verdict, not this one.\n\n")
	if err := benchdata.WriteFidelityMarkdown(&b, f.Fidelity, true); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("nightly: %w", err)
	}
	return nil
}

// runEnv is what an entry's run gets from Run.
type runEnv struct {
	log  *slog.Logger
	line *progress.Line
}

// runRun runs a run entry's spec with runner.Run, on the spec's backend.
func runRun(ctx context.Context, e Entry, dir string, env runEnv) error {
	_, err := runner.Run(ctx, runner.Options{Spec: e.Resolved, Out: dir, Log: env.log})
	return err
}

// hostVerdict sums up the host's verdicts on the windows of an entry's runs (their
// summary.json files): trusted when every window was, else how many were not and the
// first reason. Simulated runs and benchmarks have none: the verdict stays "not
// measured".
func hostVerdict(dir string) benchdata.HostVerdict {
	v := benchdata.HostVerdict{Verdict: benchdata.HostNotMeasured}
	paths, _ := filepath.Glob(filepath.Join(dir, "rep*", "summary.json"))
	if one := filepath.Join(dir, "summary.json"); exists(one) {
		paths = append(paths, one)
	}
	counts := map[string]int{}
	n := 0
	var reason string
	for _, p := range paths {
		sum, err := analysis.ReadSummary(p)
		if err != nil {
			continue
		}
		for _, w := range slices.Sorted(maps.Keys(sum.Host)) {
			h := sum.Host[w]
			n++
			counts[h.Verdict]++
			if reason == "" && len(h.Reasons) > 0 {
				reason = fmt.Sprintf("%s, %s: %s", filepath.Base(filepath.Dir(p)), w, h.Reasons[0])
			}
		}
	}
	switch {
	case n == 0:
	case counts[analysis.Trusted] == n:
		v.Verdict = analysis.Trusted
	default:
		v.Verdict = fmt.Sprintf("%d of %d windows trusted (%d degraded, %d untrusted)", counts[analysis.Trusted], n, counts[analysis.Degraded], counts[analysis.Untrusted])
		v.Note = reason
	}
	return v
}
