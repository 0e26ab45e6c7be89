package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/polebench/polebench/cluster"
	_ "github.com/polebench/polebench/cluster/all" // every backend cluster.New and cluster.Down may name
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/trial"
)

const runSummary = "Run an experiment end to end: start the spec's cluster, let the initial leader lead, drive the workload, kill the leader at crash_at, verify every acknowledged write, and write the run directory (data, summary.json, latency.png)"

// signalContext is cancelled by Ctrl-C or SIGTERM, so a run stops cleanly and keeps
// what it measured.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "SPEC [--out DIR] [--jobs N] [--workers N] [overrides]", runSummary, stderr)
	out := fs.String("out", "", "run directory (default results/<spec>/<timestamp>, with a latest link)")
	verbose := fs.Bool("v", false, "log the harness's and the workload's progress to stderr")
	jobs := jobsFlag(fs)
	workers := workersFlag(fs)
	spec, err := specArg(fs, args, overrideFlags(fs))
	if err != nil {
		return err
	}
	for _, w := range spec.Warnings() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	ctx, stop := signalContext()
	defer stop()
	if *workers == 0 {
		*workers = runner.SimWorkers(*jobs, spec)
	}
	res, err := runner.Run(ctx, runner.Options{
		Spec: spec, Out: *out, Progress: progress.New(stdout), Jobs: *jobs, Workers: *workers,
		OnRun: func(r runner.Repetition) { printRun(stdout, r) },
		Log:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if res != nil && res.Aggregate != nil {
		printAggregate(stdout, res.Aggregate)
	}
	if res != nil && res.Dir != "" {
		fmt.Fprintf(stdout, "results in %s\n", res.Dir)
	}
	return err
}

const clusterSummary = "Start the spec's cluster and keep it up until interrupted (up), or remove what a crashed harness left behind (down)"

func runCluster(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down" && args[0] != "-h" && args[0] != "--help") {
		fmt.Fprintf(stderr, "Usage: polebench cluster up SPEC [--json FILE] [overrides] | polebench cluster down\n")
		return errUsage
	}
	if args[0] == "down" {
		return clusterDown(args[1:], stdout, stderr)
	}
	if args[0] != "up" {
		args = []string{"-h"}
	} else {
		args = args[1:]
	}
	fs := newFlags("cluster up", "SPEC [--json FILE] [overrides]", clusterSummary, stderr)
	jsonOut := fs.String("json", "", "write the servers' addresses as JSON to this file")
	dataRoot := fs.String("data", "", "keep the servers' data directories here (default: a temporary directory)")
	spec, err := specArg(fs, args, overrideFlags(fs))
	if err != nil {
		return err
	}
	t, err := trial.New(spec, 1)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	cl, err := cluster.New(ctx, spec.Backend, t.Cluster(*dataRoot, "up", slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), 0))
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cl.Close(cctx)
	}()
	servers := cl.Servers()
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"servers": servers}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s cluster of %s (links: %s); Ctrl-C stops it\n", spec.Backend, spec.Name, cl.Links())
	for _, s := range servers {
		node := ""
		if s.Node != "" {
			node = "  on " + s.Node
		}
		admin := "" // etcd has no admin endpoint
		if s.Admin != "" {
			admin = "  admin http://" + s.Admin + "/status"
		}
		fmt.Fprintf(stdout, "  p%d  %-6s client %s%s%s\n", s.ID, s.DC, s.Client, admin, node)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	leader, err := cluster.WaitLeaderOf(wctx, cl) // the cluster's own probe where it has one (etcd's Status)
	cancel()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "p%d leads\n", leader)
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping")
	return nil
}

func clusterDown(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("cluster down", "[LABEL]", "Remove every namespace, link, container, network, volume, process and swarm service and config a crashed harness left behind (all polebench ones, or one label's)", stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 1 {
		fs.Usage()
		return errUsage
	}
	label := ""
	if len(pos) == 1 {
		label = pos[0]
	}
	ctx, stop := signalContext()
	defer stop()
	removed, err := cluster.Down(ctx, label)
	for _, r := range removed {
		fmt.Fprintf(stdout, "removed %s\n", r)
	}
	if len(removed) == 0 && err == nil {
		fmt.Fprintln(stdout, "nothing to remove")
	}
	return err
}

func runImage(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "build" {
		fmt.Fprintln(stderr, "Usage: polebench image build [flags]")
		return errUsage
	}
	ctx, stop := signalContext()
	defer stop()
	return image.BuildCommand(ctx, args[1:], stdout, stderr)
}
