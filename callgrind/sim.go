package callgrind

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// module is polebench's import path: its packages' functions start with it.
const module = "github.com/polebench/polebench/"

// SimParts split a simulated run of `polebench run` by package (so that a function
// moved or renamed within its package stays where it was), in self costs (Part):
//   - plots: the figures, what draws them and the PNG encoder with its deflate (only
//     the PNGs use the standard library's flate; the run's gzip files use klauspost's);
//   - files: the run directory's files: CSV rows, gzip, JSON, number formatting, I/O;
//   - analysis: the statistics, the anatomy's join, the histograms;
//   - simulation: the simulator and the servers' code it runs (replica, zab, pole,
//     the data tree, the links, the clients);
//   - runtime: Go's allocator, collector, maps, memmove and scheduler, for all parts.
var SimParts = []Part{
	{Name: "plots", Prefixes: []string{module + "figure.", module + "analysis.Plot", module + "analysis.plot", module + "analysis.(*TimelineFigure)",
		"gonum.org/v1/plot", "image/", "image.", "golang.org/x/image", "github.com/golang/freetype", "github.com/go-latex", "github.com/go-fonts",
		"git.sr.ht/~sbinet/gg", "github.com/ajstarks", "compress/flate", "compress/zlib", "hash/adler32"}},
	{Name: "files", Prefixes: []string{module + "csvfile.", module + "trial.(*Store)", module + "analysis.Write", module + "record.WriteEvents", module + "record.ReadEvents", module + "workload.CreateRecords",
		module + "workload.(*RecordWriter)", module + "workload.(*recordDeltas)", module + "trial.write", "github.com/klauspost/compress", "compress/", "encoding/json.", "encoding/csv.",
		"internal/strconv.", "strconv.", "hash/crc32", "bufio.", "os.", "syscall.", "internal/poll.", "unicode/utf8."}},
	{Name: "analysis", Prefixes: []string{module + "analysis.", "github.com/HdrHistogram/", "gonum.org/v1/gonum/"}},
	{Name: "simulation", Prefixes: []string{module}},
	{Name: "runtime", Prefixes: []string{"runtime.", "internal/runtime/", "internal/bytealg.", "sync.", "sync/", "internal/sync.", "aeshashbody", "memeqbody", "cmpbody", "indexbytebody", "gcWriteBarrier"}},
}

// RunResult is a simulated run's instructions, in all and by part.
type RunResult struct {
	Writes int     // the run's requests (summary.json's requests)
	Total  uint64  // every instruction of the process
	Parts  []Share // SimParts' shares, then "other"
}

// runtimePart is the part that Judged leaves out: when the collector runs, and so how
// much it marks, moves with the heap's timing between identical runs (two full two-dc
// runs' runtime parts 12 % apart, the rest within 0.1 %).
const runtimePart = "runtime"

// Judged is the total without the runtime's part: what a run's cost is judged by, since
// it repeats within 3 % (docs/performance.md). Work moved into allocation still shows in
// the runtime's part, which is reported beside it.
func (r *RunResult) Judged() uint64 {
	n := r.Total
	for _, s := range r.Parts {
		if s.Name == runtimePart {
			n -= s.Instructions
		}
	}
	return n
}

// PerWrite is n instructions over the run's writes.
func (r *RunResult) PerWrite(n uint64) float64 { return float64(n) / float64(max(r.Writes, 1)) }

// MeasureRun runs `exe run SPEC --backend sim --repetitions 1 --workers 1` with
// settings (spec overrides as NAME=VALUE) under callgrind, in dir: the run directory
// is dir/run, the profile dir/callgrind.out. One worker: the windows' goroutines would
// make the count the scheduler's as much as the simulator's.
func MeasureRun(ctx context.Context, exe, dir, specName string, settings []string) (*RunResult, error) {
	run := filepath.Join(dir, "run")
	if err := os.RemoveAll(run); err != nil {
		return nil, err
	}
	argv := []string{exe, "run", specName, "--backend", "sim", "--repetitions", "1", "--workers", "1", "--out", run}
	for _, s := range settings {
		argv = append(argv, "--"+strings.TrimPrefix(s, "--"))
	}
	if _, err := Run(ctx, dir, argv...); err != nil {
		return nil, err
	}
	return ReadRun(dir)
}

// ReadRun reads what MeasureRun left in dir again (with this version's parts).
func ReadRun(dir string) (*RunResult, error) {
	p, err := ReadFile(filepath.Join(dir, OutFile))
	if err != nil {
		return nil, err
	}
	writes, err := requests(filepath.Join(dir, "run", "summary.json"))
	if err != nil {
		return nil, err
	}
	return &RunResult{Writes: writes, Total: p.Total, Parts: p.Split(SimParts)}, nil
}

// requests counts a run's requests from its summary.json.
func requests(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var s struct {
		Requests struct{ OK, Failed, Unknown int }
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	n := s.Requests.OK + s.Requests.Failed + s.Requests.Unknown
	if n == 0 {
		return 0, fmt.Errorf("%s: no requests", path)
	}
	return n, nil
}

// Table prints r as lines: total and each part, in instructions a write and in all.
func (r *RunResult) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %14s %10s %7s\n", "part", "instructions", "per write", "share")
	row := func(name string, n uint64) {
		fmt.Fprintf(&b, "%-12s %14d %10.0f %6.1f%%\n", name, n, r.PerWrite(n), 100*float64(n)/float64(max(r.Total, 1)))
	}
	for _, s := range r.Parts {
		row(s.Name, s.Instructions)
	}
	row("total", r.Total)
	row("judged", r.Judged())
	fmt.Fprintf(&b, "%d writes; judged: the total without the runtime's part (it moves between identical runs)\n", r.Writes)
	return b.String()
}
