package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/nightly"
)

const nightlySummary = "Run the nightly suite (short experiments, 5 repetitions each; the shipped one unless --suite) into one directory and write its bench.json for compare and history"

func runNightly(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("nightly", "[--suite FILE] [--out DIR]", nightlySummary, stderr)
	suiteFile := fs.String("suite", "", "suite file (default: the shipped "+nightly.DefaultSuiteName+")")
	out := fs.String("out", "", "the night's directory, new or empty (default results/nightly/<timestamp>)")
	verbose := fs.Bool("v", false, "log the harness's progress to stderr")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) != 0 {
		fs.Usage()
		return errUsage
	}
	suite, err := nightly.Load(*suiteFile)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join("results", "nightly", time.Now().Format("20060102-150405"))
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	ctx, stop := signalContext()
	defer stop()
	_, err = nightly.Run(ctx, suite, nightly.Options{
		Out: *out, Progress: stdout, Version: version,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		return fmt.Errorf("%w (what was measured is in %s)", err, *out)
	}
	return nil
}
