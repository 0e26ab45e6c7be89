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
	"time"

	"github.com/polebench/polebench/bench"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/runner"
)

// KindRun runs the entry's spec with runner.Run, on the spec's backend.
const KindRun = "run"

// kind runs one entry into dir, leaving run directories (spec.resolved.json, and
// summary.json per repetition) that bench.Collect reads. A write benchmark of poled, or
// anything else that does not go through the runner, is one more entry here, writing
// a run directory of its own.
type kind func(ctx context.Context, e Entry, dir string, o Options) error

var kinds = map[string]kind{
	KindRun: func(ctx context.Context, e Entry, dir string, o Options) error {
		_, err := runner.Run(ctx, runner.Options{Spec: e.Resolved, Out: dir, Log: o.Log.With("experiment", e.Name)})
		return err
	},
}

func kindNames() []string { return sorted(slices.Collect(maps.Keys(kinds))) }

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

// Options configure Run.
type Options struct {
	// Out is the night's directory: one run directory per entry, and bench.json. It
	// must not exist or be empty.
	Out string
	Log *slog.Logger
	// Progress gets a status line and a line per finished entry; nil: quiet.
	Progress io.Writer
	// Version is the polebench version recorded in bench.json.
	Version string
}

// Run runs every entry of the suite in order and writes Out/bench.json from the run
// directories. A failed entry does not stop the others; bench.json is written with
// what was measured, and the entries' errors are returned joined.
func Run(ctx context.Context, s *Suite, o Options) (*bench.File, error) {
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
	var total time.Duration
	for _, e := range s.Entries {
		total += e.Planned()
	}
	start := time.Now()
	var done time.Duration // planned time of the finished entries
	var errs []error
	for i, e := range s.Entries {
		label := fmt.Sprintf("[%d/%d %s]", i+1, len(s.Entries), e.Name)
		line.Note("%s %s, %d × %v (%s)", label, e.Resolved.Name, e.Resolved.Repetitions, e.Resolved.Duration, e.Pos)
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
		err := kinds[e.Kind](ctx, e, dir, o)
		close(stop)
		<-ticked
		done += e.Planned()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", e.Name, e.Pos, err))
			line.Note("%s failed after %v: %v", label, time.Since(entryStart).Round(time.Second), err)
		} else {
			line.Note("%s done in %v: %s", label, time.Since(entryStart).Round(time.Second), dir)
		}
		if ctx.Err() != nil {
			break
		}
	}
	line.Done()
	f, err := bench.Collect(o.Out)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	links := f.Env.Links
	f.Env = bench.HostEnv(context.WithoutCancel(ctx), o.Version)
	f.Env.Links = links
	if err := f.WriteFile(filepath.Join(o.Out, bench.FileName)); err != nil {
		errs = append(errs, err)
	}
	line.Note("%s: %d metrics from %d experiments in %v", filepath.Join(o.Out, bench.FileName), len(f.Metrics), len(s.Entries), time.Since(start).Round(time.Second))
	return f, errors.Join(errs...)
}
