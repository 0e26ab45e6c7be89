//go:build unix

package runner

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// BenchmarkSimulated is what a simulated repetition of two-dc (120 s, the CLI's run)
// costs after sim.Run: writing its files and analysing it, on one simulation's result.
// cpu-ms/op counts every goroutine's CPU, the garbage collector's included, which is
// what repetitions running on every core pay (go test ./runner -run - -bench Simulated).
func BenchmarkSimulated(b *testing.B) {
	shipped, err := spec.Resolve("two-dc")
	if err != nil {
		b.Fatal(err)
	}
	s := specFor(b, "two-dc", "backend=sim", "duration=120s", "crash-at=60s", fmt.Sprintf("rate=%g", shipped.Rates.Total)) // the spec's rate, not testRate
	t, err := trial.New(s, 1)
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	res, err := sim.Run(context.Background(), t.Sim(log))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	cpu0 := hiccup.ProcessCPU()
	n := 0
	for b.Loop() {
		n++
		st, err := trial.Create(filepath.Join(dir, fmt.Sprint(n)), t)
		if err != nil {
			b.Fatal(err)
		}
		h := Simulated(t, res)
		d, err := trial.Derive(h)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Write(h, d); err != nil {
			b.Fatal(err)
		}
		if _, err := trial.Analyse(st.Dir(), t, h, d, log); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(hiccup.ProcessCPU()-cpu0)/float64(n)/float64(time.Millisecond), "cpu-ms/op")
}
