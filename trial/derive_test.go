package trial_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// TestAnalyseNeedsNoStore: a simulated history analyses from what Derive gives, with
// nothing written, into what its stored copy, read back, analyses into.
func TestAnalyseNeedsNoStore(t *testing.T) {
	sp, err := spec.Resolve("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	if sp, err = sp.With(spec.Setting{Name: "backend", Value: backend.Sim}, spec.Setting{Name: "duration", Value: "8s"},
		spec.Setting{Name: "crash-at", Value: "4s"}, spec.Setting{Name: "warmup", Value: "1s"}, spec.Setting{Name: "repetitions", Value: "1"}); err != nil {
		t.Fatal(err)
	}
	tt, err := trial.New(sp, 1)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	res, err := sim.Run(context.Background(), tt.Sim(log))
	if err != nil {
		t.Fatal(err)
	}
	h := runner.Simulated(tt, res)
	d, err := trial.Derive(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Paths) == 0 || d.Join.Joined == 0 {
		t.Fatalf("the join found no paths: %+v", d.Join)
	}
	live := t.TempDir()
	if _, err := trial.Analyse(live, tt, h, d, log); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(live, trial.EventsFile)); err == nil {
		t.Fatalf("Analyse wrote %s, the store's", trial.EventsFile)
	}

	st, err := trial.Create(t.TempDir(), tt)
	if err != nil {
		t.Fatal(err)
	}
	if err := trial.WriteSpec(st.Dir(), sp); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(h, d); err != nil {
		t.Fatal(err)
	}
	_, _, back, err := trial.Read(st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Join, d.Join) || len(back.Paths) != len(d.Paths) {
		t.Fatalf("stored join %+v (%d paths), derived %+v (%d)", back.Join, len(back.Paths), d.Join, len(d.Paths))
	}
	if _, err := trial.AnalyzeDir(st.Dir(), log); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(filepath.Join(live, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(st.Dir(), "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("summary.json analysed live (%d bytes) and from the store (%d bytes) differ", len(a), len(b))
	}
}
