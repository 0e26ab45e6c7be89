package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/polebench/polebench/campaign"
	"github.com/polebench/polebench/spec"
)

const sweepSummary = "Run a spec over a grid of overrides (--vary FIELD=V1,V2,... repeatable, or a campaign file, or a shipped campaign such as fig8a): one run directory per point and repetition, results.csv, aggregate.json and figures; running the same command again resumes"

func runSweep(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sweep", "SPEC|CAMPAIGN.yaml|FIG [--quick] [--vary FIELD=V1,V2,...]... [--repetitions N] [--out DIR] [--jobs N] [overrides]", sweepSummary, stderr)
	out := fs.String("out", "", "campaign directory (default results/campaigns/<name>)")
	reps := fs.Int("reps", 0, "repetitions per point (default: the campaign's, or 1)")
	jobs := jobsFlag(fs)
	quick := fs.Bool("quick", false, "the campaign's quick form (its quick: settings and axes, 1 repetition), as reproduce --quick runs it")
	var vary []campaign.Axis
	fs.Func("vary", "a field and its values: FIELD=V1,V2,... (repeatable); any override field", func(v string) error {
		f, vals, ok := strings.Cut(v, "=")
		if !ok || f == "" || vals == "" {
			return fmt.Errorf("--vary %q: want FIELD=V1,V2,...", v)
		}
		// An rtt value holds '=' itself: D1-D2=10,D1-D2=20 splits on the commas.
		vary = append(vary, campaign.Axis{Field: f, Values: strings.Split(vals, ",")})
		return nil
	})
	var settings []string
	for _, o := range spec.Overrides() {
		if o.Name == "repetitions" {
			continue
		}
		fs.Func(o.Name, "override: "+o.Usage, func(v string) error {
			settings = append(settings, o.Name+"="+v)
			return nil
		})
	}
	fs.Func("repetitions", "repetitions per point", func(v string) error {
		_, err := fmt.Sscan(v, reps)
		return err
	})
	arg, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	var c *campaign.Campaign
	if (strings.HasSuffix(arg, ".yaml") && isCampaignFile(arg)) || campaign.IsShipped(arg) {
		if c, err = campaign.Resolve(arg); err != nil {
			return err
		}
		if *quick {
			if c.Quick == nil {
				return fmt.Errorf("--quick: campaign %s has no quick form", c.Name)
			}
			if c, err = (campaign.ReproduceOptions{Quick: true}).Prepare(c); err != nil {
				return err
			}
		}
	} else if *quick {
		return fmt.Errorf("--quick: %s is a spec, not a campaign with a quick form", arg)
	} else {
		c = &campaign.Campaign{Name: strings.TrimSuffix(filepath.Base(arg), ".yaml"), Spec: arg, Repetitions: 1}
	}
	c.Settings = append(c.Settings, settings...)
	c.Vary = append(c.Vary, vary...)
	if *reps > 0 {
		c.Repetitions = *reps
	}
	if len(c.Vary) > 0 && c.Spec == arg {
		var names []string
		for _, a := range c.Vary {
			names = append(names, a.Field)
		}
		c.Name += "-" + strings.Join(names, "-")
	}
	if err := c.Check(); err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("results", "campaigns", c.Name)
	}
	ctx, stop := signalContext()
	defer stop()
	fmt.Fprintf(stdout, "campaign %s: %d points x %d repetitions into %s\n", c.Name, len(c.Points()), c.Repetitions, dir)
	rerr := campaign.Run(ctx, c, campaign.Options{Dir: dir, Progress: stdout, Jobs: *jobs,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	figs, perr := campaign.Draw(dir, c)
	for _, f := range figs {
		fmt.Fprintf(stdout, "figure: %s\n", filepath.Join(dir, f.PNG))
	}
	fmt.Fprintf(stdout, "results: %s, %s\n", filepath.Join(dir, "results.csv"), filepath.Join(dir, "aggregate.json"))
	if rows, err := campaign.ReadResults(dir, c); err == nil { // else Draw has said why
		if h := campaign.HostLine(c, rows); h != "" {
			fmt.Fprintln(stdout, h)
		}
	}
	return errors.Join(rerr, perr)
}

// oneArg parses flags anywhere and exactly one positional argument.
func oneArg(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return "", flagError(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", errUsage
	}
	return pos[0], nil
}

// isCampaignFile tells a campaign file (it has vary: or a spec: line) from a spec file.
func isCampaignFile(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "spec:") || strings.HasPrefix(line, "vary:") {
			return true
		}
	}
	return false
}

func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plot", "CAMPAIGN_DIR", "Redraw a campaign's figures (PNG and SVG) from its results.csv", stderr)
	dir, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	c, err := campaign.LoadDir(dir)
	if err != nil {
		return err
	}
	figs, err := campaign.Draw(dir, c)
	for _, f := range figs {
		fmt.Fprintf(stdout, "%s\n%s\n", filepath.Join(dir, f.PNG), filepath.Join(dir, f.SVG))
	}
	return err
}

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", "DIR", "Write report.md and report.html for a campaign directory, or for a directory of campaigns (what reproduce writes)", stderr)
	dir, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	dirs, err := campaignDirs(dir)
	if err != nil {
		return err
	}
	r, err := campaign.BuildReport(dirs, version)
	if err != nil {
		return err
	}
	if err := r.WriteMarkdown(dir); err != nil {
		return err
	}
	if err := r.WriteHTML(dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n%s\n", filepath.Join(dir, "report.md"), filepath.Join(dir, "report.html"))
	return nil
}

// campaignDirs is dir itself when it holds a campaign, else its subdirectories that do.
func campaignDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "campaign.yaml")); err == nil {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "campaign.yaml")); e.IsDir() && err == nil {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no campaign (no campaign.yaml in it or its subdirectories)", dir)
	}
	return out, nil
}

const reproduceSummary = "Run the paper's evaluation (Figs. 4b, 6, 7a, 7b, 7c, 8a, 8b) as campaigns and write report.md and report.html; --quick shortens runs and points (under an hour on the local backend); running it again resumes"

func runReproduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reproduce", "[--backend B] [--repetitions N] [--quick] [--only FIG,...] [--out DIR] [--jobs N]", reproduceSummary, stderr)
	out := fs.String("out", "", "directory (default results/reproduce, or results/reproduce-quick)")
	backend := fs.String("backend", "", "backend of every run (default: the specs', local)")
	reps := fs.Int("repetitions", 0, "runs per point (default 5, 1 with --quick)")
	quick := fs.Bool("quick", false, "30 s runs with the crash at 15 s, fewer points, 1 repetition")
	only := fs.String("only", "", "comma-separated figures: "+strings.Join(campaign.Figures, ", "))
	jobs := jobsFlag(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	o := campaign.ReproduceOptions{Out: *out, Backend: *backend, Repetitions: *reps, Quick: *quick, Jobs: *jobs, Version: version, Progress: stdout,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	if o.Out == "" {
		o.Out = filepath.Join("results", "reproduce")
		if o.Quick {
			o.Out += "-quick"
		}
	}
	ctx, stop := signalContext()
	defer stop()
	t0 := time.Now()
	_, err := campaign.Reproduce(ctx, o)
	fmt.Fprintf(stdout, "report: %s (%s)\n", filepath.Join(o.Out, "report.html"), time.Since(t0).Round(time.Second))
	return err
}
