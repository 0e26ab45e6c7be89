package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/pool"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

const simSummary = "Check the replica's safety under random faults in the simulator: for each seed, draw kills (some losing unsynced writes or tearing the log), restarts, a cut in one of the partition shapes, a pause and a slow disk, run the spec in virtual time and check that no acknowledged write is lost, the history is linearizable and every server ends with the same state"

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
	faultsFile := fs.String("faults", "", "run this schedule (a faults.json a check wrote, e.g. a shrunk one) instead of each seed's")
	disk := fs.Duration("disk-latency", sim.SyncDiskLatency, "how long a server's log write takes (fsync on: wider windows for a kill to find work in progress)")
	cf := newCheckFlags(fs)
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
	chose := map[string]bool{}
	for _, s := range *sets {
		chose[s.Name] = true
	}
	fixed, err := readFaults(*faultsFile)
	if err != nil {
		return err
	}
	broken, err := cf.brokenServers()
	if err != nil {
		return err
	}
	variants, err := cf.chosen()
	if err != nil {
		return err
	}
	cfgOf := func(seed uint64) (*trial.Test, sim.Config, error) {
		t, err := trial.Seeded(sp, seed)
		if err != nil {
			return nil, sim.Config{}, err
		}
		c := t.Sim(nil)
		c.Trace, c.DiskLatency = false, *disk
		c, err = sim.ForCheck(c, chose["duration"], chose["rate"], *cf.schedule)
		if fixed != nil {
			c.Faults = fixed
		}
		c.Broken = broken
		t.Faults = c.Faults
		return t, c, err
	}
	if _, _, err := cfgOf(*from); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	if variants != nil {
		return simPower(ctx, stdout, variants, cfgOf, *from, *seeds, min(pool.Workers(0, *jobs), *seeds))
	}
	type outcome struct {
		seed          uint64
		test          *trial.Test
		cfg           sim.Config
		res           *sim.Result
		unsafe, stuck error
	}
	replay := replayArgs(args[1:], "from", "seeds", "jobs") // args[0] is "check", which the line names
	// Seeds run on every core; their outcomes are reported in seed order.
	workers := min(pool.Workers(0, *jobs), *seeds)
	line := progress.New(stdout)
	t0 := time.Now()
	failed, done := 0, 0
	var stuck []uint64
	pool.Ordered(ctx, *seeds, workers, func(i int) outcome {
		seed := *from + uint64(i)
		t, cfg, _ := cfgOf(seed) // its error is the first seed's, returned above
		res, unsafe, stuck := sim.Check(ctx, cfg)
		return outcome{seed, t, cfg, res, unsafe, stuck}
	}, func(_ int, o outcome) {
		done++
		if ctx.Err() != nil {
			return // cut short: neither safe nor unsafe
		}
		verdict, why := "FAILED", o.unsafe
		switch {
		case o.unsafe != nil:
			failed++
			if o.stuck != nil {
				stuck = append(stuck, o.seed)
			}
		case o.stuck != nil:
			stuck = append(stuck, o.seed)
			verdict, why = "did not converge", o.stuck
		}
		if why != nil {
			dir := filepath.Join(*out, fmt.Sprintf("seed-%d", o.seed))
			line.Note("seed %d %s: %v\n  schedule: %v\n  run directory: %s\n  replay: polebench sim check%s --from %d --seeds 1",
				o.seed, verdict, why, o.cfg.Faults, dir, replay, o.seed)
			if werr := writeCheck(dir, o.test, o.res); werr != nil {
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

// simPower prints the simulator's power table (power): every variant it carries.
func simPower(ctx context.Context, stdout io.Writer, variants []replica.VariantInfo, cfgOf func(uint64) (*trial.Test, sim.Config, error), from uint64, seeds, workers int) error {
	line := progress.New(stdout)
	t0 := time.Now()
	schedule := func(seed uint64) []nemesis.Fault {
		_, c, _ := cfgOf(seed)
		return c.Faults
	}
	run := func(ctx context.Context, broken map[int]replica.Variant, seed uint64, fs []nemesis.Fault) (string, error) {
		_, c, _ := cfgOf(seed)
		c.Faults, c.Broken = fs, broken
		_, unsafe, stuck := sim.Check(ctx, c)
		switch {
		case unsafe != nil:
			return verdictUnsafe, unsafe
		case stuck != nil:
			return verdictStuck, stuck
		}
		return verdictOK, nil
	}
	carries := func(v replica.VariantInfo) string {
		if !v.Sim {
			return "the simulator's disk tears no record (a kill loses unsynced writes only)"
		}
		return ""
	}
	rows := power(ctx, variants, carries, from, seeds, workers, schedule, run, line)
	line.Done()
	printPower(stdout, rows)
	fmt.Fprintf(stdout, "sim power: %d variants, at most %d seeds each from %d, in %v\n", len(rows), seeds, from, time.Since(t0).Round(time.Second))
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

// writeCheck writes what a failing seed's run left: its history as any simulated
// run's, its fault schedule and its servers' state digests.
func writeCheck(dir string, t *trial.Test, res *sim.Result) error {
	if res == nil {
		return nil
	}
	st, err := trial.Create(dir, t)
	if err != nil {
		return err
	}
	h := runner.Simulated(t, res)
	d, err := trial.Derive(h)
	if err != nil {
		return err
	}
	return errors.Join(st.Write(h, d), st.WriteJSON("faults.json", t.Faults), st.WriteJSON("digests.json", res.Digests))
}
