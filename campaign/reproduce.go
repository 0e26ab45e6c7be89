package campaign

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polebench/polebench/progress"
)

//go:embed shipped/*.yaml
var shipped embed.FS

// Figures lists the shipped campaigns, in the paper's order.
// Placements are Fig. 7a and 7b on etcd, with placement policies as the curves (none:
// Raft's choice; a static priority; POLE's latency): real clusters only, so `sweep`
// runs them and the simulated reproduction does not.
var Placements = []string{"fig7a-etcd", "fig7b-dep1-etcd"}

// IsShipped says whether name is a shipped campaign.
func IsShipped(name string) bool {
	return slices.Contains(Figures, name) || slices.Contains(Placements, name)
}

var Figures = []string{"fig4b", "fig6", "fig7a", "fig7b-dep1", "fig7b-dep3", "fig7c", "fig8a", "fig8a-rtt", "fig8b"}

// Shipped returns a shipped campaign by name.
func Shipped(name string) (*Campaign, error) {
	b, err := shipped.ReadFile("shipped/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no shipped campaign %q (shipped: %s)", name, strings.Join(append(slices.Clone(Figures), Placements...), ", "))
	}
	return Parse("campaign/shipped/"+name+".yaml", b)
}

// Resolve loads a campaign given as a file or as a shipped name (fig8a).
func Resolve(arg string) (*Campaign, error) {
	if strings.HasSuffix(arg, ".yaml") || strings.Contains(arg, "/") {
		return Load(arg)
	}
	return Shipped(arg)
}

// ReproduceOptions configure Reproduce.
type ReproduceOptions struct {
	Out         string   // one campaign directory per figure under it, and the report
	Backend     string   // "" keeps the specs' (local)
	Repetitions int      // 0 keeps the campaigns' (5), or 1 with Quick
	Quick       bool     // the campaigns' shortened forms: 30 s runs, fewer points
	Only        []string // figures to run; nil: all
	Jobs        int      // at most this many simulated runs at once; 0: one per core
	Version     string
	Progress    io.Writer
	Log         *slog.Logger
}

// Prepare applies the reproduce options to a shipped campaign.
func (o ReproduceOptions) Prepare(c *Campaign) (*Campaign, error) {
	out := *c
	if o.Quick && c.Quick != nil {
		out.Settings = slices.Clone(c.Quick.Settings)
		if len(c.Quick.Vary) > 0 {
			out.Vary = slices.Clone(c.Quick.Vary)
		}
		out.Repetitions = 1
	}
	if o.Repetitions > 0 {
		out.Repetitions = o.Repetitions
	}
	if o.Backend != "" {
		out.Settings = append(slices.Clone(out.Settings), "backend="+o.Backend)
	}
	out.Quick = nil
	errf := func(field, format string, a ...any) error {
		return fmt.Errorf("%s: %s: %s", c.Name, field, fmt.Sprintf(format, a...))
	}
	if err := out.check(errf); err != nil {
		return nil, err
	}
	return &out, nil
}

// Reproduce runs the paper's evaluation as campaigns, one directory each under Out,
// then writes report.md and report.html there. Finished runs are kept: running it
// again resumes. A simulated run that two figures have (Fig. 7c's are Fig. 7b's) is
// simulated once and shared (Options.Shared).
func Reproduce(ctx context.Context, o ReproduceOptions) (*Report, error) {
	names := Figures
	if len(o.Only) > 0 {
		for _, n := range o.Only {
			if !slices.Contains(Figures, n) {
				return nil, fmt.Errorf("--only %s: no such figure (figures: %s)", n, strings.Join(Figures, ", "))
			}
		}
		names = o.Only
	}
	var dirs []string
	var errs []error
	var cs []*Campaign
	// Figures share the simulated runs they have in common (Fig. 7c's are Fig. 7b's):
	// the whole evaluation's ETA counts the runs not done yet that none shares.
	shared := NewShared()
	todo, sims := 0, 0
	for _, n := range names {
		c, err := Shipped(n)
		if err != nil {
			return nil, err
		}
		if c, err = o.Prepare(c); err != nil {
			return nil, err
		}
		cs = append(cs, c)
		t, s := shared.plan(c, filepath.Join(o.Out, n))
		todo += t
		sims += t - s
	}
	if todo > sims {
		progress.New(o.Progress).Note("%s to go, %d of them identical to another figure's: %d to simulate", plural(todo, "run"), todo-sims, sims)
	}
	tally := progress.NewTally(sims)
	for i, n := range names {
		c := cs[i]
		dir := filepath.Join(o.Out, n)
		if err := Run(ctx, c, Options{Dir: dir, Progress: o.Progress, Log: o.Log, Jobs: o.Jobs, Tally: tally, Shared: shared}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
		dirs = append(dirs, dir)
		if ctx.Err() != nil {
			break
		}
	}
	r, err := BuildReport(dirs, o.Version)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	if err := r.WriteMarkdown(o.Out); err != nil {
		return r, err
	}
	if err := r.WriteHTML(o.Out); err != nil {
		return r, err
	}
	return r, errors.Join(errs...)
}
