package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/pool"
	"github.com/polebench/polebench/spec"
)

// Parallelism is how many of these runs go at once: simulated ones share nothing, so
// they take every core the memory allows, or at most jobs if jobs > 0; real ones
// share the machine they measure, so one at a time.
func Parallelism(jobs int, sps ...*spec.Spec) int {
	var most uint64
	for _, sp := range sps {
		if sp == nil || !backend.Simulated(sp.Backend) {
			return 1
		}
		most = max(most, simMemory(sp))
	}
	return pool.Workers(most, jobs)
}

// SimWorkers is how many goroutines each simulated repetition of sp can step its DCs
// on (Options.Workers): the cores left over by the repetitions that run at once; 1
// for a real backend, or where the cores are all taken.
func SimWorkers(jobs int, sp *spec.Spec) int {
	if !backend.Simulated(sp.Backend) {
		return 1
	}
	return max(1, runtime.GOMAXPROCS(0)/max(1, min(Parallelism(jobs, sp), sp.Repetitions)))
}

// simMemory bounds what a simulated run holds at its peak: a base, and per server
// what it preloaded, twice over (its tree, its snapshot, a snapshot in flight; the
// trees and snapshots of one process share the preload's bytes), with room for the
// heap's growth when runs overlap. The peaks it was fitted to, alone and two at once,
// are in docs/performance.md ("Memory at scale"); 2 MB a preloaded MB a server keeps
// about a third above the largest of them.
func simMemory(sp *spec.Spec) uint64 {
	return 512<<20 + uint64(sp.N())*uint64(max(sp.PreloadMB, 0))*2<<20
}

// outcome is what a repetition left: its run if it got as far as analysis, and what
// went wrong.
type outcome struct {
	run *Repetition
	err error
}

// repetition runs repetition n in its directory (dir itself for a single one).
func repetition(ctx context.Context, o Options, dir string, n int) outcome {
	if o.Spec.Repetitions > 1 {
		dir = filepath.Join(dir, fmt.Sprintf("rep%d", n))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return outcome{err: fmt.Errorf("repetition %d: %w", n, err)}
	}
	r := &repetitionRun{o: o, n: n, dir: dir, log: o.Log.With("rep", n)}
	run, err := r.run(ctx)
	if err != nil {
		err = fmt.Errorf("repetition %d: %w", n, err)
	}
	return outcome{run, err}
}
