//go:build unix

package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/sim"
)

// BenchmarkSimulated is what a simulated repetition of two-dc (120 s, the CLI's run)
// costs after sim.Run: writing its files and analysing it, on one simulation's result.
// cpu-ms/op counts every goroutine's CPU, the garbage collector's included, which is
// what repetitions running on every core pay (go test ./runner -run - -bench Simulated).
func BenchmarkSimulated(b *testing.B) {
	s := specFor(b, "two-dc", "backend=sim", "duration=120s", "crash-at=60s")
	topo, err := s.Topology()
	if err != nil {
		b.Fatal(err)
	}
	plan := s.Plan(topo, s.Seed)
	o := Options{Spec: s, Log: slog.New(slog.DiscardHandler), Progress: progress.NewPlain(io.Discard)}
	res, err := sim.Run(context.Background(), simConfig(s, topo, plan, s.Seed, o.Log))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		n++
		r := &trial{o: o, n: 1, dir: filepath.Join(dir, fmt.Sprint(n)), log: o.Log}
		if err := os.Mkdir(r.dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if _, err := r.simulated(res, topo, plan); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/float64(time.Millisecond), "cpu-ms/op")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
