package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/nightly"
	"github.com/polebench/polebench/spec"
)

const nightlySummary = "Run the nightly suite (the shipped one unless --suite; --quick its reduced set) into one directory and write its bench.json, for compare and history, and fidelity.md: each entry's verdict against its goal (met, MISSED or inconclusive, by its rule). An entry this machine cannot run is skipped, saying why (under CI=true, where make deps installs everything, a skip fails). Exit status 1 when an entry failed or missed its goal with confidence; the last line names the inconclusive and skipped entries"

func runNightly(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("nightly", "[--suite FILE] [--out DIR] [--quick] [--set NAME=VALUE ...]", nightlySummary, stderr)
	suiteFile := fs.String("suite", "", "suite file (default: the shipped "+nightly.DefaultSuiteName+")")
	out := fs.String("out", "", "the night's directory, new or empty (default results/nightly/<timestamp>)")
	quick := fs.Bool("quick", false, "run only the entries tagged quick:, with their quick settings")
	var planted []spec.Setting
	fs.Func("set", "plant a regression: apply the spec override `NAME=VALUE` (as polebench run --NAME VALUE takes it) to every run entry; repeatable; bench.json records it", func(v string) error {
		st, err := spec.ParseSetting(v)
		planted = append(planted, st)
		return err // Select checks the name and the value against every run entry
	})
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
	if suite, err = suite.Select(*quick, planted); err != nil {
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
		Out: *out, Progress: stdout, Version: version, Strict: os.Getenv("CI") != "",
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		return fmt.Errorf("%w (what was measured is in %s)", err, *out)
	}
	return nil
}
