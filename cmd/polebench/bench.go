package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/bench"
	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/progress"
)

const benchSummary = "Write benchmark on loopback: poled, Apache ZooKeeper and/or etcd as separate processes, 1 kB writes from N clients of each one's protocol, closed or open loop; writes/s and p50/p99/p999 (HDR), a comparison with ratios and Mann-Whitney p-values, bench.json"

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "[--flavor poled,zookeeper,etcd] [--servers 3,5] [--fsync off,on] [flags]", benchSummary, stderr)
	flavors := fs.String("flavor", strings.Join(bench.DefaultFlavors(), ","),
		"flavors, comma-separated, the first compared with each other: "+strings.Join(bench.Flavors(), ", "))
	servers := fs.String("servers", "3", "ensemble sizes, comma-separated")
	fsync := fs.String("fsync", "off", "fsync of the log before acknowledging: off, on, or off,on")
	mode := fs.String("mode", bench.Closed, "closed (each client writes when answered) or open (--rate in all, latency from the intended time)")
	rate := fs.Float64("rate", 0, "open loop: total writes/s")
	clients := fs.Int("clients", 32, "client sessions, round-robin over the servers")
	payload := fs.Int("payload", 1024, "bytes per write")
	warmup := fs.Duration("warmup", 0, "load before the first window, per cluster (default 10s)")
	duration := fs.Duration("duration", 0, "length of one measurement window (default 15s)")
	reps := fs.Int("repetitions", 3, "windows per flavor and setting; the flavors' windows alternate")
	out := fs.String("out", "", "directory for bench.json and table.txt (default results/bench/<timestamp>)")
	verbose := fs.Bool("v", false, "log the clusters' progress to stderr")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) != 0 {
		fs.Usage()
		return errUsage
	}
	cfg := bench.Config{Flavors: bench.SplitList(*flavors), Mode: *mode, Rate: *rate, Clients: *clients,
		Payload: *payload, Warmup: *warmup, Duration: *duration, Repetitions: *reps}
	for _, s := range bench.SplitList(*servers) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("--servers: %q is not a number", s)
		}
		cfg.Servers = append(cfg.Servers, n)
	}
	for _, s := range bench.SplitList(*fsync) {
		switch s {
		case "on":
			cfg.Fsync = append(cfg.Fsync, true)
		case "off":
			cfg.Fsync = append(cfg.Fsync, false)
		default:
			return fmt.Errorf("--fsync: %q: want on, off, or off,on", s)
		}
	}
	cfg.Defaults()
	if err := cfg.Check(); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join("results", "bench", time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Progress = progress.New(stdout)
	ctx, stop := signalContext()
	defer stop()
	res, runErr := bench.Run(ctx, cfg)
	cfg.Progress.Done()
	if res == nil {
		return runErr
	}
	// What was measured is kept, also when a later setting failed or ^C stopped it.
	table, err := res.Save(*out, benchdata.HostEnv(ctx, version))
	fmt.Fprint(stdout, table)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results in %s\n", *out)
	return runErr
}
