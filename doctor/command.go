package doctor

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/polebench/polebench/progress"
)

// Config is the command line of `polebench doctor`: the options and how to print.
type Config struct {
	Options
	JSON    bool
	Verbose bool
}

// Flags registers doctor's flags on fs; the CLI parses them.
func Flags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.BoolVar(&c.JSON, "json", false, "print the report as JSON")
	fs.BoolVar(&c.Verbose, "v", false, "log the runs' progress to stderr")
	fs.DurationVar(&c.Duration, "duration", DefaultDuration, "length of each calibration run")
	fs.DurationVar(&c.Warmup, "warmup", DefaultWarmup, "the start of each calibration run that is not measured")
	fs.DurationVar(&c.Budget, "budget", DefaultBudget, "no calibration run starts that would end after this (from the start)")
	fs.DurationVar(&c.ZooKeeperWarmUp, "zookeeper-warmup", DefaultZooKeeperWarmUp, "how long ZooKeeper's JIT warms before each of its runs")
	fs.StringVar(&c.Out, "out", "", "keep the calibration runs' directories here (default: a temporary directory, removed)")
	fs.BoolVar(&c.NoCalibration, "no-calibration", false, "only the checks (a few seconds)")
	fs.Func("calibrate", "backend/flavor list to calibrate, in order (default local/poled,local/zookeeper)", func(v string) error {
		c.Targets = []Target{}
		for s := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			t, err := ParseTarget(s)
			if err != nil {
				return err
			}
			c.Targets = append(c.Targets, t)
		}
		return nil
	})
	fs.Func("rungs", "multiples of the spec's rate to climb (default 1,2,4)", func(v string) error {
		c.Rungs = nil
		for s := range strings.SplitSeq(v, ",") {
			k, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || k <= 0 {
				return fmt.Errorf("%q: want positive multiples like 1,2,4", v)
			}
			c.Rungs = append(c.Rungs, k)
		}
		return nil
	})
	return c
}

// Command runs the doctor and prints its report to stdout; progress and logs go to
// stderr. It returns an error only for a bug of its own or an output it cannot write:
// whatever the host lacks, or an interruption, is in the report.
func Command(ctx context.Context, c *Config, stdout, stderr io.Writer) error {
	level := slog.LevelWarn
	if c.Verbose {
		level = slog.LevelInfo
	}
	o := c.Options
	o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o.Progress = progress.New(stderr)
	r, err := Run(ctx, o)
	o.Progress.Done()
	if r != nil {
		var werr error
		if c.JSON {
			werr = WriteJSON(stdout, r)
		} else {
			werr = Render(stdout, r)
		}
		if werr != nil && err == nil {
			err = fmt.Errorf("doctor: writing the report: %w", werr)
		}
	}
	return err
}
