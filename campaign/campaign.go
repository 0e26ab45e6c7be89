// Package campaign runs an experiment over a grid of overrides (a sweep), one run
// directory per point and repetition, and turns the run directories into results.csv,
// aggregate.json, figures and a report. It sits above the runner: a campaign is many
// calls of runner.Run, and the run directory (summary.json) is all it reads back, so an
// interrupted campaign resumes where it stopped and its figures can be redrawn alone.
package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/pool"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/spec"
)

// Axis is one varied override: every value is tried with every value of the others.
type Axis struct {
	Field  string   `yaml:"field" json:"field"`
	Values []string `yaml:"values" json:"values"`
}

// Plot says what a campaign's figures show: each metric against X, one series per
// value of Series (when set).
type Plot struct {
	X       string   `yaml:"x,omitempty" json:"x,omitempty"`
	Series  string   `yaml:"series,omitempty" json:"series,omitempty"`
	Metrics []string `yaml:"metrics,omitempty" json:"metrics,omitempty"`
	// Style is "bars" (a group of bars per category: Fig. 6, 7c) or "lines" (over a
	// numeric x); by default bars when x is a category (the oracle), else lines.
	Style string `yaml:"style,omitempty" json:"style,omitempty"`
}

// Campaign is a sweep: a spec, fixed settings, the grid, and repetitions per point.
type Campaign struct {
	Name        string   `yaml:"name" json:"name"`
	Title       string   `yaml:"title,omitempty" json:"title,omitempty"`
	Claim       string   `yaml:"claim,omitempty" json:"claim,omitempty"` // what the paper says the figure shows
	Spec        string   `yaml:"spec" json:"spec"`                       // a file or a shipped spec name
	Settings    []string `yaml:"settings,omitempty" json:"settings,omitempty"`
	Vary        []Axis   `yaml:"vary" json:"vary"`
	Repetitions int      `yaml:"repetitions" json:"repetitions"`
	Plot        Plot     `yaml:"plot,omitempty" json:"plot,omitempty"`
	Expect      *Expect  `yaml:"expect,omitempty" json:"expect,omitempty"`
	// Quick replaces settings and axes for `reproduce --quick`: shorter runs, fewer points.
	Quick *Quick `yaml:"quick,omitempty" json:"quick,omitempty"`
}

// Quick is a campaign's shortened form.
type Quick struct {
	Settings []string `yaml:"settings" json:"settings"`
	Vary     []Axis   `yaml:"vary,omitempty" json:"vary,omitempty"`
}

// Point is one cell of the grid.
type Point struct {
	Index    int
	Settings []spec.Setting // the varied fields' values, in the order of Vary
}

// Dir is the point's directory name: its index and values, readable and unique.
func (p Point) Dir() string {
	parts := []string{fmt.Sprintf("%03d", p.Index)}
	for _, s := range p.Settings {
		v := strings.NewReplacer("/", "_", "=", "_", " ", "_").Replace(s.Value)
		parts = append(parts, s.Name+"="+v)
	}
	return strings.Join(parts, ",")
}

// Value is the point's value of a varied field ("" if it is not varied).
func (p Point) Value(field string) string {
	for _, s := range p.Settings {
		if s.Name == field {
			return s.Value
		}
	}
	return ""
}

// Points expands the grid, the first axis varying slowest.
func (c *Campaign) Points() []Point {
	pts := []Point{{}}
	for _, a := range c.Vary {
		var next []Point
		for _, p := range pts {
			for _, v := range a.Values {
				next = append(next, Point{Settings: append(slices.Clone(p.Settings), spec.Setting{Name: a.Field, Value: v})})
			}
		}
		pts = next
	}
	for i := range pts {
		pts[i].Index = i + 1
	}
	return pts
}

// Error is a campaign file error located at a line.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Field, e.Msg)
}

// Parse reads a campaign file's text; name is the file, for errors.
func Parse(name string, data []byte) (*Campaign, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: name, Field: "campaign", Msg: "empty file"}
	}
	doc := root.Content[0]
	lines := map[string]int{} // field path -> line
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		lines[path] = n.Line
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				p := k
				if path != "" {
					p = path + "." + k
				}
				lines[p] = n.Content[i].Line
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, e := range n.Content {
				walk(e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(doc, "")
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	var c Campaign
	if err := dec.Decode(&c); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			// yaml says "line N: field x not found in type ..."; keep its line, our form.
			msg := te.Errors[0]
			var line int
			fmt.Sscanf(msg, "line %d:", &line)
			if _, after, ok := strings.Cut(msg, ": "); ok {
				msg = after
			}
			msg = strings.Replace(msg, " in type campaign.Campaign", "", 1)
			return nil, &Error{File: name, Line: line, Field: "campaign", Msg: msg}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	errf := func(field, format string, a ...any) error {
		return &Error{File: name, Line: lines[field], Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	if c.Name == "" {
		return nil, errf("name", "missing required field")
	}
	if c.Spec == "" {
		return nil, errf("spec", "missing required field")
	}
	if c.Repetitions == 0 {
		c.Repetitions = 1
	}
	if c.Repetitions < 0 {
		return nil, errf("repetitions", "%d is negative", c.Repetitions)
	}
	if err := c.check(func(field, format string, a ...any) error { return errf(field, format, a...) }); err != nil {
		return nil, err
	}
	return &c, nil
}

// Check checks a campaign built in code (a sweep's command line) as Parse checks a file.
func (c *Campaign) Check() error {
	if c.Repetitions < 1 {
		return fmt.Errorf("campaign %s: repetitions %d, want at least 1", c.Name, c.Repetitions)
	}
	return c.check(func(field, format string, a ...any) error {
		return fmt.Errorf("campaign %s: %s: %s", c.Name, field, fmt.Sprintf(format, a...))
	})
}

// Load reads a campaign file.
func Load(path string) (*Campaign, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read campaign: %w", err)
	}
	return Parse(path, b)
}

// check resolves the spec and every point's overrides, so a bad value is an error
// before the first run, not hours into the campaign.
func (c *Campaign) check(errf func(field, format string, a ...any) error) error {
	base, err := spec.Resolve(c.Spec)
	if err != nil {
		return errf("spec", "%v", err)
	}
	fixed, err := c.fixed()
	if err != nil {
		return errf("settings", "%v", err)
	}
	if _, err := base.With(fixed...); err != nil {
		return errf("settings", "%v", err)
	}
	names := map[string]bool{}
	for _, o := range spec.Overrides() {
		names[o.Name] = true
	}
	seen := map[string]bool{}
	for i, a := range c.Vary {
		p := fmt.Sprintf("vary[%d]", i)
		if !names[a.Field] {
			return errf(p+".field", "%q is not an override (see polebench help run)", a.Field)
		}
		if seen[a.Field] {
			return errf(p+".field", "%s is varied twice", a.Field)
		}
		seen[a.Field] = true
		if len(a.Values) == 0 {
			return errf(p+".values", "no values")
		}
		for k, v := range a.Values {
			if _, err := base.With(append(slices.Clone(fixed), spec.Setting{Name: a.Field, Value: v})...); err != nil {
				return errf(fmt.Sprintf("%s.values[%d]", p, k), "%v", err)
			}
		}
	}
	if st := c.Plot.Style; st != "" && st != StyleBars && st != StyleLines {
		return errf("plot.style", "%q: want %s or %s", st, StyleBars, StyleLines)
	}
	if x, _ := c.axes(); c.Plot.Style == StyleLines {
		if _, ok := numericX(x, c.values(x)); !ok {
			return errf("plot.style", "lines need a numeric x; %s's values are categories (%s)", x, strings.Join(c.values(x), ", "))
		}
	}
	for _, f := range []struct{ field, v string }{{"plot.x", c.Plot.X}, {"plot.series", c.Plot.Series}} {
		if f.v != "" && !seen[f.v] {
			return errf(f.field, "%s is not a varied field", f.v)
		}
	}
	return nil
}

func (c *Campaign) fixed() ([]spec.Setting, error) {
	var out []spec.Setting
	for _, s := range c.Settings {
		st, err := spec.ParseSetting(s)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// SpecFor is the spec of one point's repetition (1-based): the campaign's spec with
// its settings, the point's values, one repetition, and a seed per repetition.
func (c *Campaign) SpecFor(p Point, rep int) (*spec.Spec, error) {
	base, err := spec.Resolve(c.Spec)
	if err != nil {
		return nil, err
	}
	fixed, err := c.fixed()
	if err != nil {
		return nil, err
	}
	sp, err := base.With(append(append(fixed, p.Settings...), spec.Setting{Name: "repetitions", Value: "1"})...)
	if err != nil {
		return nil, err
	}
	sp.Seed += uint64(rep - 1)
	return sp, nil
}

// doneMarker is written into a run directory once its summary is complete: a
// directory without it is redone when the campaign resumes.
const doneMarker = ".done"

// RunDir is where a point's repetition lives in the campaign directory.
func RunDir(dir string, p Point, rep int) string {
	return filepath.Join(dir, "runs", p.Dir(), fmt.Sprintf("rep%d", rep))
}

// Done says whether a run directory holds a finished run.
func Done(runDir string) bool {
	_, err := os.Stat(filepath.Join(runDir, doneMarker))
	return err == nil
}

// Options configure Run.
type Options struct {
	Dir      string // the campaign directory
	Progress io.Writer
	Log      *slog.Logger
	// RunOne runs one spec into a directory; default runner.Run. Simulated runs go
	// in parallel, so it must be safe for concurrent use.
	RunOne func(ctx context.Context, sp *spec.Spec, dir string) error
	// Jobs caps how many simulated runs go at once (0: runner.Parallelism's choice).
	Jobs int
	// Tally, when set, counts the runs of several campaigns (reproduce's figures): a
	// campaign none of whose runs has finished yet takes its ETA from their pace.
	Tally *progress.Tally
	// Shared, when set, holds the simulated runs finished by the campaigns before this
	// one (reproduce's figures): a run with the key of one of them takes its files
	// rather than being simulated again, and this campaign's runs join it. It takes
	// RunOne's runs to be determined by their spec, as the simulator's are.
	Shared *Shared
}

// Run runs every point's repetitions that are not done yet, then writes results.csv
// and aggregate.json. A run that fails is reported and left undone; the campaign
// goes on with the next one, and only a cancelled ctx stops it.
func Run(ctx context.Context, c *Campaign, o Options) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.RunOne == nil {
		o.RunOne = func(ctx context.Context, sp *spec.Spec, dir string) error { return RunSpec(ctx, sp, dir, o.Log) }
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	// Finished runs are only reused by the same spec with the same fixed settings:
	// points are named by their varied values alone.
	if old, err := LoadDir(o.Dir); err == nil && (old.Spec != c.Spec || !slices.Equal(old.Settings, c.Settings)) {
		return fmt.Errorf("%s holds campaign %s of spec %s with settings %v; this one is spec %s with %v: use another directory",
			o.Dir, old.Name, old.Spec, old.Settings, c.Spec, c.Settings)
	}
	if err := c.writeResolved(filepath.Join(o.Dir, "campaign.yaml")); err != nil {
		return err
	}
	line := progress.New(o.Progress)
	pts := c.Points()
	total := len(pts) * c.Repetitions
	type job struct {
		p    Point
		rep  int
		rd   string
		sp   *spec.Spec
		err  error
		key  string // runKey, for a simulated run another campaign may share
		from string // a finished run with the same key, whose files this one takes
	}
	var jobs []job
	var sps []*spec.Spec
	sims := 0 // the jobs that simulate (or measure) rather than share
	for _, p := range pts {
		for rep := 1; rep <= c.Repetitions; rep++ {
			if rd := RunDir(o.Dir, p, rep); !Done(rd) {
				sp, err := c.SpecFor(p, rep)
				j := job{p: p, rep: rep, rd: rd, sp: sp, err: err}
				if o.Shared != nil && err == nil {
					j.key, _ = runKey(sp)
					j.from = o.Shared.find(j.key)
				}
				if j.from == "" {
					sims++
				}
				jobs = append(jobs, j)
				sps = append(sps, sp)
			}
		}
	}
	workers := runner.Parallelism(o.Jobs, sps...)
	todo := len(jobs)
	done := total - todo
	if done > 0 {
		line.Note("[%s] %d of %d runs already done: resuming", c.Name, done, total)
	}
	if todo > 0 {
		var sharing string
		if n := todo - sims; n > 0 {
			sharing = fmt.Sprintf("; %d of them identical to runs another figure simulated, shared rather than simulated again", n)
		}
		line.Note("[%s] %s to go (%s x %s), %d at a time%s", c.Name, plural(todo, "run"), plural(len(pts), "point"), plural(c.Repetitions, "repetition"), workers, sharing)
	}
	jobCtx, stop := context.WithCancel(ctx)
	defer stop()
	own := progress.NewTally(sims) // shared runs take no time: the pace is the simulated ones'
	// eta is the campaign's time left: from its own finished runs, else from the pace
	// of the other campaigns' (reproduce), else unknown until the first run finishes.
	eta := func() string {
		n, left := own.Counts()
		left -= n
		if left == 0 {
			return progress.ETAString(0, true, "run")
		}
		if d, ok := own.ETA(); ok {
			return progress.ETAString(d, true, "run")
		}
		if o.Tally != nil {
			if pace, ok := o.Tally.Pace(); ok {
				return progress.ETAString(pace*time.Duration(left), true, "run")
			}
		}
		return progress.ETAString(0, false, "run")
	}
	overall := func() string {
		if o.Tally == nil {
			return ""
		}
		d, ok := o.Tally.ETA()
		n, total := o.Tally.Counts()
		return fmt.Sprintf("; all: %d of %d runs, %s", n, total, progress.ETAString(d, ok, "run"))
	}
	type ran struct {
		err  error
		took time.Duration
	}
	var errs []error
	pool.Ordered(jobCtx, len(jobs), workers, func(i int) ran {
		j := jobs[i]
		if j.err != nil {
			return ran{err: j.err}
		}
		if line.Live() {
			line.Update("[%s] run %d of %d: %s rep %d/%d; campaign %s%s",
				c.Name, total-todo+i+1, total, settingsString(j.p.Settings), j.rep, c.Repetitions, eta(), overall())
		}
		t0 := time.Now()
		os.RemoveAll(j.rd) // a half-written run starts afresh
		if j.from != "" {
			if err := linkRun(j.from, j.rd); err != nil {
				return ran{err: fmt.Errorf("share %s: %w", j.from, err)}
			}
			return ran{took: time.Since(t0)}
		}
		err := o.RunOne(jobCtx, j.sp, j.rd)
		return ran{err, time.Since(t0)}
	}, func(i int, r ran) {
		j, err := jobs[i], r.err
		if j.from == "" {
			own.Finish()
			if o.Tally != nil {
				o.Tally.Finish()
			}
		}
		what := fmt.Sprintf("[%s] run %d of %d", c.Name, total-todo+i+1, total)
		if err == nil || (ctx.Err() == nil && j.from == "" && hasSummary(j.rd)) {
			// A run whose checks failed (say, a lost write) is still a measured run.
			if err != nil {
				errs = append(errs, fmt.Errorf("%s rep %d: %w", j.p.Dir(), j.rep, err))
			}
			if werr := os.WriteFile(filepath.Join(j.rd, doneMarker), nil, 0o644); werr != nil {
				errs = append(errs, werr)
				stop() // resuming would redo it: stop here, as for any lost result
				return
			}
			done++
			var msg string
			if j.from != "" {
				msg = fmt.Sprintf("%s shared: %s rep %d/%d%s, identical to %s; campaign %s%s", what, settingsString(j.p.Settings), j.rep, c.Repetitions,
					electedNote(j.rd), relTo(filepath.Dir(o.Dir), j.from), eta(), overall())
			} else {
				if err == nil {
					// Only a run without errors is shared: one whose checks failed is
					// simulated again, so that each figure reports its failure.
					o.Shared.add(j.key, j.rd)
				}
				msg = fmt.Sprintf("%s done: %s rep %d/%d%s, %.1f s; campaign %s%s", what, settingsString(j.p.Settings), j.rep, c.Repetitions,
					electedNote(j.rd), r.took.Seconds(), eta(), overall())
			}
			if line.Live() {
				line.Update("%s", msg)
			} else {
				line.Note("%s", msg)
			}
			return
		}
		errs = append(errs, fmt.Errorf("%s rep %d: %w", j.p.Dir(), j.rep, err))
		line.Note("%s failed: %s rep %d: %v; campaign %s%s", what, j.p.Dir(), j.rep, err, eta(), overall())
	})
	line.Done()
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("interrupted: %d of %d runs done; run the same command again to resume", done, total))
	}
	if err := WriteResults(o.Dir, c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RunSpec is one run of a campaign: runner.Run into dir.
func RunSpec(ctx context.Context, sp *spec.Spec, dir string, log *slog.Logger) error {
	_, err := runner.Run(ctx, runner.Options{Spec: sp, Out: dir, Log: log})
	return err
}

// electedNote is ", elected p4" from a finished run's summary ("" without one).
func electedNote(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return ""
	}
	var s struct {
		NewLeader int `json:"new_leader"`
	}
	if json.Unmarshal(b, &s) != nil || s.NewLeader == 0 {
		return ""
	}
	return fmt.Sprintf(", elected p%d", s.NewLeader)
}

// relTo is path relative to base, or path itself if it has no relative form.
func relTo(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}

func hasSummary(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	return err == nil
}

func settingsString(s []spec.Setting) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = x.String()
	}
	return strings.Join(parts, " ")
}

func (c *Campaign) writeResolved(path string) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LoadDir reads the campaign a directory was made with.
func LoadDir(dir string) (*Campaign, error) {
	return Load(filepath.Join(dir, "campaign.yaml"))
}

// plural is "1 run", "2 runs".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
