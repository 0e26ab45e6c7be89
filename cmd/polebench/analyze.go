package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/polebench/polebench/campaign"
	"github.com/polebench/polebench/trial"
)

const analyzeSummary = "Analyse a stored run, a repetition set, a campaign or a directory of campaigns again with this version's code, rewriting their analysis files (summary.json, plots, results.csv); the measured data is left as it is"

func runAnalyze(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("analyze", "DIR", analyzeSummary, stderr)
	dir, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if dirs, err := campaignDirs(dir); err == nil {
		for _, d := range dirs {
			n, err := campaign.Analyze(d, log)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %s analysed; results.csv, aggregate.json and the figures rewritten\n", d, plural(n, "run"))
		}
		return nil
	}
	sums, err := trial.AnalyzeDir(dir, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s analysed\n", dir, plural(len(sums), "run"))
	return nil
}

// plural is "1 run", "2 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
