package nightly

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/callgrind"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/spec"
)

// KindSimInstructions counts the instructions of one simulated run of the entry's
// spec under callgrind (`polebench instructions`): the simulator's cost as the host's
// load cannot move it.
const KindSimInstructions = "sim-instructions"

// instructionsMinEffect is the rise in instructions a write that is a regression:
// two runs of one build agree within it (docs/performance.md).
var instructionsMinEffect = benchdata.MinEffect{Rel: 0.03}

func applySimInstructions(e *Entry, sets []spec.Setting) (int, error) {
	for i, st := range sets {
		switch st.Name {
		case "backend", "flavor", "workers", "repetitions":
			return i, fmt.Errorf("%s: a %s entry runs one repetition in the simulator on one worker", st, KindSimInstructions)
		}
	}
	return applyRun(e, sets)
}

// callgrindRate is about the simulated writes a second of a run under callgrind on
// 2-core host (a 10 s two-dc run, 10,111 writes, took 17.6 CPU-s under it): the plan.
const callgrindRate = 500

func plannedSimInstructions(e Entry) time.Duration {
	sp := e.Resolved
	writes := sp.Duration.Seconds() * sp.Rates.Total
	return time.Duration(writes/callgrindRate*float64(time.Second)) + 20*time.Second
}

// runSimInstructions writes dir/bench.json with the instructions a write without the
// runtime's part (judged: lower is better, a rise of instructionsMinEffect a
// regression; the collector's share moves between identical runs), in all and by part
// (reported: a part grows when work moves into it), and dir/instructions.txt.
func runSimInstructions(ctx context.Context, e Entry, dir string, env runEnv) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	name := e.Spec
	if f := e.Base.File; f != "" {
		if _, err := os.Stat(f); err == nil {
			if name, err = filepath.Abs(f); err != nil {
				return err
			}
		}
	}
	var flags []string
	for _, st := range e.Set {
		flags = append(flags, st.String())
	}
	res, err := callgrind.MeasureRun(ctx, exe, dir, name, flags)
	if err != nil {
		return err
	}
	table := res.Table()
	env.line.Note("%s", table)
	if err := os.WriteFile(filepath.Join(dir, "instructions.txt"), []byte(table), 0o644); err != nil {
		return err
	}
	det := func(name string, better benchdata.Better, v float64) benchdata.Metric {
		return benchdata.Metric{Name: name, Unit: "instructions", Better: better, MinEffect: instructionsMinEffect, Deterministic: true, Samples: []float64{v}}
	}
	f := &benchdata.File{Format: benchdata.FormatVersion, Metrics: []benchdata.Metric{det("instructions_per_write", benchdata.Lower, res.PerWrite(res.Judged())),
		det("instructions_per_write.total", benchdata.Neither, res.PerWrite(res.Total))}}
	for _, s := range res.Parts {
		f.Metrics = append(f.Metrics, det("instructions_per_write."+s.Name, benchdata.Neither, res.PerWrite(s.Instructions)))
	}
	// The run directory and the profile stay for a look; the profile is large.
	return f.WriteFile(filepath.Join(dir, benchdata.FileName))
}

func simInstructionsWhere(Entry) string { return backend.Sim + " under callgrind, 1 worker" }
