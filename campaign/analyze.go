package campaign

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/polebench/polebench/trial"
)

// Analyze analyses every finished run of the campaign in dir again with the current
// code (trial.AnalyzeDir), then rewrites results.csv and aggregate.json from them and
// redraws the figures. It returns how many runs it analysed.
func Analyze(dir string, log *slog.Logger) (int, error) {
	c, err := LoadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range c.Points() {
		for rep := 1; rep <= c.Repetitions; rep++ {
			rd := RunDir(dir, p, rep)
			if !Done(rd) {
				continue // redone when the campaign resumes
			}
			if _, err := trial.AnalyzeDir(rd, log); err != nil {
				return n, fmt.Errorf("campaign %s: %w", c.Name, err)
			}
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("campaign %s: no finished run in %s", c.Name, filepath.Join(dir, "runs"))
	}
	if err := WriteResults(dir, c); err != nil {
		return n, err
	}
	_, err = Draw(dir, c)
	return n, err
}

// IsDir says whether dir holds a campaign.
func IsDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "campaign.yaml"))
	return err == nil
}
