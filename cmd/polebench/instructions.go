package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/polebench/polebench/callgrind"
)

const instructionsSummary = "Count the instructions of a spec's simulated run under valgrind's callgrind (one repetition, one worker): per simulated write, split into simulation, files, analysis, plots, runtime and other, and judged without the runtime's part (Go's collector, whose share moves between identical runs). The simulator's cost, the same on a loaded host as on a quiet one"

func runInstructions(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("instructions", "SPEC [--out DIR] [overrides] | --again DIR", instructionsSummary, stderr)
	out := fs.String("out", "", "where the run directory (DIR/run) and callgrind.out go (default a temporary directory, removed)")
	fs.String("again", "", "alone: read DIR (an earlier --out) again instead of running, its callgrind.out split with this version's parts")
	if len(args) == 2 && strings.TrimLeft(args[0], "-") == "again" {
		res, err := callgrind.ReadRun(args[1])
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, res.Table())
		return err
	}
	sets := overrideFlags(fs)
	sp, err := specArg(fs, args, sets)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "polebench-instructions-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	name := sp.Name
	if _, err := os.Stat(sp.File); err == nil { // a file, not a shipped spec's name
		if name, err = filepath.Abs(sp.File); err != nil {
			return err
		}
	}
	var flags []string
	for _, st := range *sets {
		flags = append(flags, st.String())
	}
	ctx, stop := signalContext()
	defer stop()
	fmt.Fprintf(stdout, "%s under callgrind (a few minutes: valgrind runs it some 50 times slower)\n", name)
	res, err := callgrind.MeasureRun(ctx, exe, dir, name, flags)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, res.Table())
	return err
}
