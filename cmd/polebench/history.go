package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/polebench/polebench/benchdata"
)

const historySummary = "Keep the nights: add appends a night (a nightly directory or bench.json, or run directories) to the history file (JSON lines); plot draws each metric over the nights with change points marked, and history.html beside the plots"

var defaultHistory = filepath.Join("results", "nightly", "history.jsonl")

func runHistory(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "plot") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintf(stderr, "Usage: polebench history add [--file FILE] DIR|bench.json | polebench history plot [--file FILE] [--out DIR]\n\n%s.\n", historySummary)
			return flag.ErrHelp
		}
		fmt.Fprintf(stderr, "Usage: polebench history add [--file FILE] DIR|bench.json | polebench history plot [--file FILE] [--out DIR]\n")
		return errUsage
	}
	sub := args[0]
	fs := newFlags("history "+sub, "[--file FILE] ...", historySummary, stderr)
	file := fs.String("file", defaultHistory, "the history file")
	out := fs.String("out", filepath.Join("results", "nightly", "plots"), "plot: directory for the figures and history.html")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return flagError(err)
	}
	switch {
	case sub == "add" && len(pos) == 1:
		f, err := benchdata.Load(pos[0])
		if err != nil {
			return err
		}
		if len(f.Env.Planted) > 0 {
			// A planted regression is no baseline and no point of the trend.
			fmt.Fprintf(stdout, "%s: not added: %s is a planted night (nightly --set %s)\n", *file, pos[0], strings.Join(f.Env.Planted, " --set "))
			return nil
		}
		if err := benchdata.AppendHistory(*file, f); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: added %s (%d metrics)\n", *file, pos[0], len(f.Metrics))
		return nil
	case sub == "plot" && len(pos) == 0:
		nights, err := benchdata.ReadHistory(*file)
		if err != nil {
			return err
		}
		page, err := benchdata.WriteHistoryPage(nights, *out)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d plots of %d nights in %s\n%s\n", len(page.Figures), len(nights), *out, page.HTML)
		return nil
	}
	fs.Usage()
	return errUsage
}
