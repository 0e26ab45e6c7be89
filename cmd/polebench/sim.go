package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/pool"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/workload"
)

const simSummary = "Check the replica's safety under random faults in the simulator: for each seed, draw kills, restarts and a partition, run the spec in virtual time and check that no acknowledged write is lost, the history is linearizable and every server ends with the same state"

func runSim(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintf(stderr, "usage: polebench sim check [SPEC] [--seeds N] [--from S] [--out DIR] [--jobs N] [overrides]\n\n%s\n", simSummary)
		return errUsage
	}
	fs := newFlags("sim check", "[SPEC] [--seeds N] [--from S] [--out DIR] [--jobs N] [overrides]", simSummary, stderr)
	seeds := fs.Int("seeds", 100, "how many seeds to run")
	from := fs.Uint64("from", 1, "first seed (a failure prints its seed: --from S --seeds 1 replays it)")
	out := fs.String("out", filepath.Join("results", "sim-check"), "where a failing seed's run directory goes")
	jobs := jobsFlag(fs)
	disk := fs.Duration("disk-latency", sim.SyncDiskLatency, "how long a server's log write takes (fsync on: wider windows for a kill to find work in progress)")
	sets := overrideFlags(fs)
	// The schedule is random and the verdict is safety, not latency: the spec's crash
	// and warmup do not apply, and must not stop a shorter --duration.
	*sets = append(*sets, spec.Setting{Name: "crash-at", Value: "none"}, spec.Setting{Name: "warmup", Value: "0s"})
	rest := args[1:]
	if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
		rest = append([]string{"two-dc"}, rest...)
	}
	sp, err := specArg(fs, rest, sets)
	if err != nil {
		return err
	}
	if *seeds < 1 {
		return fmt.Errorf("--seeds %d: want at least 1", *seeds)
	}
	// Unless the user chose otherwise, short runs at a light load (200 req/s in all,
	// split as the spec splits it): the faults are the point.
	chose := map[string]bool{}
	for _, s := range *sets {
		chose[s.Name] = true
	}
	if !chose["duration"] {
		sp.Duration = 10 * time.Second
	}
	rates := sp.RatesByDC()
	if !chose["rate"] {
		total := 0.0
		for _, r := range rates {
			total += r
		}
		for dc, r := range rates {
			rates[dc] = r * 200 / total
		}
	}
	if sp.Duration < 5*time.Second {
		return fmt.Errorf("--duration %v: random schedules need at least 5s (faults from 1 s, everything back 2 s before the end)", sp.Duration)
	}
	topo, err := sp.Topology()
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	cfgOf := func(seed uint64) sim.Config {
		return sim.Config{
			Topology: topo, Plan: sp.Plan(topo, seed), Oracle: sp.Oracle, InitialLeader: sp.InitialLeader,
			PreloadMB: sp.PreloadMB, Faults: sim.RandomFaults(topo, seed, sp.Duration), Rates: rates,
			Arrival: workload.Arrival(sp.Workload.Arrival), Seed: seed, Duration: sp.Duration,
			PayloadBytes: sp.Workload.PayloadBytes, Keys: sp.Workload.Keys, DiskLatency: *disk,
		}
	}
	type outcome struct {
		seed          uint64
		cfg           sim.Config
		res           *sim.Result
		unsafe, stuck error
	}
	// Seeds run on every core; their outcomes are reported in seed order.
	workers := min(pool.Workers(0, *jobs), *seeds)
	line := progress.New(stdout)
	t0 := time.Now()
	failed, done := 0, 0
	var stuck []uint64
	pool.Ordered(ctx, *seeds, workers, func(i int) outcome {
		seed := *from + uint64(i)
		cfg := cfgOf(seed)
		res, unsafe, stuck := sim.Check(ctx, cfg)
		return outcome{seed, cfg, res, unsafe, stuck}
	}, func(_ int, o outcome) {
		done++
		if ctx.Err() != nil {
			return // cut short: neither safe nor unsafe
		}
		if o.stuck != nil {
			stuck = append(stuck, o.seed)
			line.Note("seed %d: liveness: %v (schedule %v)", o.seed, o.stuck, o.cfg.Faults)
		}
		if o.unsafe != nil {
			failed++
			dir := filepath.Join(*out, fmt.Sprintf("seed-%d", o.seed))
			line.Note("seed %d FAILED: %v\n  schedule: %v\n  run directory: %s\n  replay: polebench sim check %s --from %d --seeds 1",
				o.seed, o.unsafe, o.cfg.Faults, dir, sp.Name, o.seed)
			if werr := writeCheck(dir, o.res, o.cfg.Faults); werr != nil {
				line.Note("  (could not write it: %v)", werr)
			}
		}
		el := time.Since(t0)
		eta := time.Duration(float64(el) / float64(done) * float64(*seeds-done))
		line.Update("sim check %s: seed %d (%d of %d), %d unsafe, %d stuck, %v elapsed, ETA %v",
			sp.Name, o.seed, done, *seeds, failed, len(stuck), el.Round(time.Second), eta.Round(time.Second))
	})
	line.Done()
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d seeds (%d failed)", done, failed)
	}
	fmt.Fprintf(stdout, "sim check %s: %d seeds from %d in %v on %d cores: %d unsafe (lost or unexplained writes, non-linearizable, diverging state), %d did not converge %v\n",
		sp.Name, *seeds, *from, time.Since(t0).Round(time.Millisecond), workers, failed, len(stuck), stuck)
	if failed > 0 {
		return fmt.Errorf("%d of %d seeds violated safety", failed, *seeds)
	}
	return nil
}

// writeCheck writes what a failing seed's run left: its records, events, verification
// and fault schedule.
func writeCheck(dir string, res *sim.Result, faults any) error {
	if res == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w, err := workload.CreateRecords(filepath.Join(dir, "requests.csv.gz"))
	if err != nil {
		return err
	}
	if err := w.Write(res.Records...); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := analysis.WriteEvents(filepath.Join(dir, "events.jsonl"), res.Timeline); err != nil {
		return err
	}
	for name, v := range map[string]any{"verification.json": res.Verification, "faults.json": faults, "digests.json": res.Digests} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
