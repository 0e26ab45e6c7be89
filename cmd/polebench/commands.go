package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/polebench/polebench/spec"
)

// version is set at build time: -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand. run gets the arguments after the subcommand's name and
// returns an error to print (exit 1), or errUsage after printing usage (exit 2).
type command struct {
	name, args, summary string
	run                 func(args []string, stdout, stderr io.Writer) error
}

var errUsage = errors.New("usage")

func commands() []command {
	return []command{
		{"run", "SPEC [--out DIR] [--workers N] [overrides]", "run an experiment end to end and write its run directory", runRun},
		{"instructions", "SPEC [--out DIR] [overrides]", "a simulated run's instructions per write under callgrind, by part (simulation, files, analysis, plots, runtime)", runInstructions},
		{"analyze", "DIR", "analyse a stored run, repetition set or campaign again with this version's code", runAnalyze},
		{"model", "SPEC [--json] [overrides]", "print the analytic model's scores, predicted latencies and winners", runModel},
		{"sweep", "SPEC|CAMPAIGN.yaml --vary FIELD=V1,V2 [...]", "run a spec over a grid of overrides; results.csv, aggregate.json, figures", runSweep},
		{"plot", "CAMPAIGN_DIR", "redraw a campaign's figures from its results.csv", runPlot},
		{"reproduce", "[--quick] [--only FIG] [--backend B]", "the paper's evaluation as campaigns, with report.html", runReproduce},
		{"report", "DIR", "write report.md and report.html for campaign directories", runReport},
		{"sim", "check [SPEC] [--seeds N]", "random fault schedules (kills, restarts, cuts, pauses, disk faults) in the simulator; safety checks per seed", runSim},
		{"check", checkArgs, checkSummary, runCheck},
		{"cluster", "up SPEC | down [LABEL]", "start a spec's cluster until interrupted; clean up leftovers", runCluster},
		{"netem", "probe | apply SPEC | show | clear", "kernel netem: probe this kernel; apply, show, clear a netns cluster's links", runNetem},
		{"place", placeArgs, "run a placement controller beside an etcd cluster: POLE's oracles move its leader", runPlace},
		{"bench", "[--flavor poled,zookeeper,etcd] [--servers 3,5] [--fsync off,on]", "write benchmark of poled, ZooKeeper and/or etcd on loopback, each through its own client; poled beside each other flavor, table and bench.json", runBench},
		{"nightly", "[--suite FILE] [--out DIR] [--quick] [--set NAME=VALUE]", "run the nightly benchmark suite; bench.json with fidelity verdicts", runNightly},
		{"compare", "[--trusted-only] OLD NEW | --history F NEW", "compare two nights' metrics (Mann-Whitney U); exit 1 on a regression", runCompare},
		{"history", "add DIR | plot", "append a night to the history file; plot each metric over the nights", runHistory},
		{"image", "build", "build the poled Docker image FROM scratch (no registry)", runImage},
		{"doctor", "[--json] [--calibrate B/F]", "what this host can emulate faithfully: checks and a calibration, under 2 minutes", runDoctor},
		{"version", "", "print the version", func(_ []string, stdout, _ io.Writer) error {
			_, err := fmt.Fprintf(stdout, "polebench %s\n", version)
			return err
		}},
		{"help", "[COMMAND | backends]", "show this help, a command's flags, or what each backend and flavor carries", runHelp},
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
			return 2
		default:
			fmt.Fprintf(stderr, "polebench %s: %v\n", name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "polebench: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "polebench reproduces the evaluation of POLE (leader election by application scores).\n\nUsage:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  polebench %-8s %-26s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(w, "\nSPEC is a spec file or a shipped spec: %s.\n", strings.Join(spec.ShippedNames(), ", "))
	fmt.Fprintf(w, "Run 'polebench help COMMAND' for a command's flags.\n")
}

func runHelp(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stdout)
		return nil
	}
	if args[0] == "backends" {
		return printBackends(stdout)
	}
	for _, c := range commands() {
		if c.name == args[0] && c.name != "help" {
			if err := c.run([]string{"-h"}, stdout, stdout); !errors.Is(err, flag.ErrHelp) {
				return err
			}
			return nil
		}
	}
	fmt.Fprintf(stderr, "polebench help: unknown command %q\n", args[0])
	return errUsage
}

// newFlags is a flag set whose usage names the command; errors and help go to stderr.
func newFlags(name, args, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: polebench %s %s\n\n%s.\n\nFlags:\n", name, args, summary)
		fs.PrintDefaults()
	}
	return fs
}

// overrideFlags registers one flag per spec override; the returned slice collects the
// settings in command-line order.
func overrideFlags(fs *flag.FlagSet) *[]spec.Setting {
	var sets []spec.Setting
	for _, o := range spec.Overrides() {
		fs.Func(o.Name, "override: "+o.Usage, func(v string) error {
			sets = append(sets, spec.Setting{Name: o.Name, Value: v})
			return nil
		})
	}
	return &sets
}

// jobsFlag registers --jobs: at most that many simulated runs at once (real ones
// always go one at a time).
func jobsFlag(fs *flag.FlagSet) *int {
	return countFlag(fs, "jobs", "runs", "at most this many simulated runs at once (default 0: one per core, as memory allows)")
}

// workersFlag registers --workers: goroutines per simulated run (sim.Config.Workers).
func workersFlag(fs *flag.FlagSet) *int {
	return countFlag(fs, "workers", "goroutines", "goroutines stepping each simulated run's data centers, in windows; the outputs are the same at any count (default 0: the cores the runs at once leave each)")
}

// countFlag registers a flag for a count of what, 0 or more (0 by default).
func countFlag(fs *flag.FlagSet, name, what, usage string) *int {
	n := 0
	fs.Func(name, usage, func(v string) error {
		v2, err := strconv.Atoi(v)
		if err != nil || v2 < 0 {
			return fmt.Errorf("want a whole number of %s, 0 or more", what)
		}
		n = v2
		return nil
	})
	return &n
}

// specArg parses args (flags anywhere, one positional SPEC), then resolves SPEC (a
// file or a shipped name) and applies the override flags registered with sets.
func specArg(fs *flag.FlagSet, args []string, sets *[]spec.Setting) (*spec.Spec, error) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, flagError(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, errUsage
	}
	spec, err := spec.Resolve(pos[0])
	if err != nil {
		return nil, err
	}
	return spec.With(*sets...)
}

// flagError maps a flag parse error, which the flag set has already printed with its
// usage, to an exit status of 2.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return errUsage
}

// parseInterleaved parses flags that may come before or after positional arguments
// (the standard flag package stops at the first positional one).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
