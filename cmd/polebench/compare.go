package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/polebench/polebench/benchdata"
)

const compareSummary = "Compare two nights (bench.json files, or run, campaign or nightly directories), or a night with the last K nights of a history: a metric regresses when a two-sided Mann-Whitney U test rejects at --alpha and its median moved the worse way by at least the metric's minimum effect; any lost acknowledged write fails. Exit status 1 on a failure"

func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", "[--trusted-only] OLD NEW | --history FILE [--last K] NEW", compareSummary, stderr)
	alpha := fs.Float64("alpha", benchdata.DefaultAlpha, "significance level of the test")
	history := fs.String("history", "", "compare NEW with the last --last nights of this history file instead of OLD")
	last := fs.Int("last", 5, "with --history: how many nights make the baseline (their samples pooled)")
	format := fs.String("format", "text", "output on stdout: text or markdown")
	markdown := fs.String("markdown", "", "also write the Markdown table to this file (a CI job summary)")
	trustedOnly := fs.Bool("trusted-only", false, "compare only runs whose every window the host's verdict trusted (simulated metrics and lost writes count every run); an experiment left with too few fails")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(err)
	}
	if (*history == "" && len(pos) != 2) || (*history != "" && len(pos) != 1) || (*format != "text" && *format != "markdown") {
		fs.Usage()
		return errUsage
	}
	cur, err := benchdata.Load(pos[len(pos)-1])
	if err != nil {
		return err
	}
	var old *benchdata.File
	var note string
	if *history != "" {
		nights, err := benchdata.ReadHistory(*history)
		skipped := 0
		if err == nil {
			nights, skipped = benchdata.Comparable(nights, cur.Env)
			old, err = benchdata.Baseline(nights, *last)
		}
		switch {
		case errors.Is(err, os.ErrNotExist) || errors.Is(err, benchdata.ErrNoBaseline):
			msg := fmt.Sprintf("no baseline yet: %s has no night; nothing to compare with\n", *history)
			if skipped > 0 {
				msg = fmt.Sprintf("no baseline yet: %s has %d night(s), none of this suite and length or all planted; nothing to compare with\n", *history, skipped)
			}
			return noBaseline(msg, cur, *markdown, stdout)
		case err != nil:
			return err
		}
		note = fmt.Sprintf("old: the last %d of %d nights of %s, samples pooled (simulated metrics: the last night's)", min(*last, len(nights)), len(nights), *history)
		if skipped > 0 {
			note += fmt.Sprintf("; %d night(s) of another suite or length, or planted, left out", skipped)
		}
	} else if old, err = benchdata.Load(pos[0]); err != nil {
		return err
	}
	c, err := benchdata.CompareWith(old, cur, benchdata.Options{Alpha: *alpha, TrustedOnly: *trustedOnly})
	if err != nil {
		return err
	}
	if note != "" {
		c.Notes = append([]string{note}, c.Notes...)
	}
	write := c.WriteText
	if *format == "markdown" {
		write = c.WriteMarkdown
	}
	if err := write(stdout); err != nil {
		return err
	}
	if *markdown != "" {
		f, err := os.Create(*markdown)
		if err != nil {
			return err
		}
		err = c.WriteMarkdown(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if n := c.Failures(); n > 0 {
		var few []string
		for _, h := range c.Hosts {
			if h.TooFew != "" {
				few = append(few, h.Experiment)
			}
		}
		if len(few) > 0 {
			return fmt.Errorf("%d failing metric(s); too few trusted runs to compare %s", n, strings.Join(few, ", "))
		}
		return fmt.Errorf("%d failing metric(s)", n)
	}
	return nil
}

// noBaseline reports a night without a baseline: nothing to compare, but its fidelity
// verdicts still go to the output and the job summary.
func noBaseline(msg string, cur *benchdata.File, markdown string, stdout io.Writer) error {
	fmt.Fprint(stdout, msg)
	if len(cur.Fidelity) > 0 {
		fmt.Fprintln(stdout, "\nfidelity of the new night:")
		if err := benchdata.WriteFidelityText(stdout, cur.Fidelity); err != nil {
			return err
		}
	}
	if markdown == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("### Nightly benchmarks: no baseline yet\n\n" + msg)
	if len(cur.Fidelity) > 0 {
		b.WriteString("\n#### Fidelity of the new night\n\n")
		if err := benchdata.WriteFidelityMarkdown(&b, cur.Fidelity, false); err != nil {
			return err
		}
	}
	return os.WriteFile(markdown, []byte(b.String()), 0o644)
}
