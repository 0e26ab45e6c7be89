package campaign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// TestRunKey: two runs share a key exactly when everything that feeds the simulation is
// the same: Fig. 7c's runs are Fig. 7b's at the same p, oracle and repetition; another
// repetition (seed), point, setting, spec or a real backend is not.
func TestRunKey(t *testing.T) {
	type run struct {
		fig     string
		backend string
		quick   bool
		at      map[string]string // the point's values
		rep     int
	}
	fig7c := run{fig: "fig7c", backend: "sim", at: map[string]string{"p": "0.25", "oracle": "history"}, rep: 1}
	with := func(r run, f func(*run)) run {
		r.at = map[string]string{"p": r.at["p"], "oracle": r.at["oracle"]}
		f(&r)
		return r
	}
	for _, c := range []struct {
		name  string
		a, b  run
		share bool
	}{
		{"fig7c is fig7b-dep1's run", fig7c, with(fig7c, func(r *run) { r.fig = "fig7b-dep1" }), true},
		{"the same repetition again", fig7c, fig7c, true},
		{"another repetition's seed", fig7c, with(fig7c, func(r *run) { r.fig, r.rep = "fig7b-dep1", 2 }), false},
		{"another p", fig7c, with(fig7c, func(r *run) { r.fig, r.at["p"] = "fig7b-dep1", "0.5" }), false},
		{"another oracle", fig7c, with(fig7c, func(r *run) { r.fig, r.at["oracle"] = "fig7b-dep1", "worst-case" }), false},
		{"another deployment", fig7c, with(fig7c, func(r *run) { r.fig = "fig7b-dep3" }), false},
		// At a point both have (p = 1, worst-case), quick's runs are shorter.
		{"quick's shorter runs", with(fig7c, func(r *run) { r.at["p"], r.at["oracle"] = "1", "worst-case" }),
			with(fig7c, func(r *run) { r.fig, r.quick, r.at["p"], r.at["oracle"] = "fig7b-dep1", true, "1", "worst-case" }), false},
		{"p = 1, worst-case in both", with(fig7c, func(r *run) { r.at["p"], r.at["oracle"] = "1", "worst-case" }),
			with(fig7c, func(r *run) { r.fig, r.at["p"], r.at["oracle"] = "fig7b-dep1", "1", "worst-case" }), true},
		{"a real backend", with(fig7c, func(r *run) { r.backend = "local" }), with(fig7c, func(r *run) { r.fig, r.backend = "fig7b-dep1", "local" }), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var keys []string
			for _, r := range []run{c.a, c.b} {
				sp := shippedSpec(t, r.fig, ReproduceOptions{Backend: r.backend, Quick: r.quick}, r.at, r.rep)
				k, ok := runKey(sp)
				if ok != (r.backend == "sim") {
					t.Fatalf("%s on %s: shareable %v", r.fig, r.backend, ok)
				}
				keys = append(keys, k)
			}
			if share := keys[0] != "" && keys[0] == keys[1]; share != c.share {
				t.Errorf("shared %v, want %v", share, c.share)
			}
		})
	}
}

// shippedSpec is the spec of a shipped figure's run at the point with values at.
func shippedSpec(t *testing.T, fig string, o ReproduceOptions, at map[string]string, rep int) *spec.Spec {
	t.Helper()
	c, err := Shipped(fig)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = o.Prepare(c); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Points() {
		match := true
		for f, v := range at {
			match = match && p.Value(f) == v
		}
		if match {
			sp, err := c.SpecFor(p, rep)
			if err != nil {
				t.Fatal(err)
			}
			return sp
		}
	}
	t.Fatalf("%s has no point %v", fig, at)
	return nil
}

// TestRunKeyCoversTheSpec: the key is the spec's JSON, so every field the run may read
// must be in it. A field kept out of the JSON (a json:"-" tag, an unexported field)
// fails here, to be put in the key first; Spec.pos only places errors in the file.
func TestRunKeyCoversTheSpec(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(ty reflect.Type, path string)
	walk = func(ty reflect.Type, path string) {
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(ty.Elem(), path)
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			p := path + "." + f.Name
			switch {
			case p == "Spec.pos":
			case !f.IsExported():
				t.Errorf("%s (%s) is not in the spec's JSON", p, f.Type)
			case strings.Split(f.Tag.Get("json"), ",")[0] == "-":
				t.Errorf("%s is kept out of the spec's JSON", p)
			default:
				walk(f.Type, p)
			}
		}
	}
	walk(reflect.TypeFor[spec.Spec](), "Spec")
	if !seen[reflect.TypeFor[spec.Workload]()] {
		t.Fatal("the walk did not reach the workload: it checks too little")
	}
}

// TestSharedRuns: a campaign run after another that simulated some of its runs takes
// those runs' files (hard links, its own done markers) instead of simulating them,
// says so, and resumes like any campaign; a run whose checks failed, a real backend's
// run and a campaign without the registry simulate every run.
func TestSharedRuns(t *testing.T) {
	for _, c := range []struct {
		name     string
		backend  string
		registry bool
		// The second campaign's runs simulated and shared: its six runs are p=1 x
		// {consensus, latency, history} x 2 repetitions; the first simulated the
		// consensus and latency ones, consensus rep 1 with a failed check.
		wantSims, wantShared int
	}{
		{"sim", "sim", true, 3, 3},
		{"local", "local", true, 6, 0},
		{"no registry", "sim", false, 6, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			campaignOf := func(name, ps, oracles string) *Campaign {
				cp, err := Parse(name+".yaml", []byte(fmt.Sprintf(`name: %s
spec: three-dc-dep3
settings: [duration=30s, crash-at=15s, backend=%s]
vary:
  - {field: p, values: [%s]}
  - {field: oracle, values: [%s]}
repetitions: 2
`, name, c.backend, ps, oracles)))
				if err != nil {
					t.Fatal(err)
				}
				return cp
			}
			first, second := campaignOf("first", `"0.5", "1"`, "consensus, latency"), campaignOf("second", `"1"`, "consensus, latency, history")
			out := t.TempDir()
			var mu sync.Mutex
			calls := map[string]int{} // campaign -> runs simulated
			runOne := func(_ context.Context, sp *spec.Spec, rd string) error {
				mu.Lock()
				calls[filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(rd))))]++
				mu.Unlock()
				if err := os.MkdirAll(filepath.Join(rd, "sub"), 0o755); err != nil {
					return err
				}
				for _, f := range []string{trial.EventsFile, filepath.Join("sub", "more")} {
					if err := os.WriteFile(filepath.Join(rd, f), fmt.Appendf(nil, "%d %s", sp.Seed, f), 0o644); err != nil {
						return err
					}
				}
				if err := (&analysis.Summary{NewLeader: 4}).WriteFile(filepath.Join(rd, "summary.json")); err != nil {
					return err
				}
				if strings.Contains(rd, filepath.Join(",p=1,oracle=consensus", "rep1")) {
					return errors.New("verification: a lost write") // in either campaign: it is the same run
				}
				return nil
			}
			var shared *Shared
			if c.registry {
				shared = NewShared()
			}
			plan := NewShared()
			var prog bytes.Buffer
			for i, cp := range []*Campaign{first, second} {
				todo, planned := plan.plan(cp, filepath.Join(out, cp.Name))
				wantPlanned := 0
				if i == 1 && c.backend == "sim" {
					wantPlanned = 4 // planned as if every run of the first finished cleanly
				}
				if todo != 8-2*i || planned != wantPlanned {
					t.Errorf("%s planned: %d to go, %d shared; want %d, %d", cp.Name, todo, planned, 8-2*i, wantPlanned)
				}
				err := Run(t.Context(), cp, Options{Dir: filepath.Join(out, cp.Name), Progress: &prog, RunOne: runOne, Shared: shared})
				if err == nil || !strings.Contains(err.Error(), "a lost write") {
					t.Errorf("%s: %v, want the failed check", cp.Name, err)
				}
			}
			if calls["first"] != 8 || calls["second"] != c.wantSims {
				t.Errorf("simulated %d and %d runs, want 8 and %d", calls["first"], calls["second"], c.wantSims)
			}
			text := prog.String()
			if n := strings.Count(text, "[second] run "); n != 6 {
				t.Errorf("%d lines for the second campaign's runs, want 6:\n%s", n, text)
			}
			if n := strings.Count(text, " shared: "); n != c.wantShared {
				t.Errorf("%d runs said shared, want %d:\n%s", n, c.wantShared, text)
			}
			// Each shared run is the first campaign's, file for file: its history linked,
			// the analysis's files (rewritten in place by analyze) copied, its own marker.
			linked := 0
			for _, p := range second.Points() {
				for rep := 1; rep <= 2; rep++ {
					rd := RunDir(filepath.Join(out, "second"), p, rep)
					if !Done(rd) {
						t.Errorf("%s is not done", rd)
					}
					src := RunDir(filepath.Join(out, "first"), Point{Index: 2 + p.Index, Settings: p.Settings}, rep)
					if !sameFile(t, filepath.Join(rd, trial.EventsFile), filepath.Join(src, trial.EventsFile)) {
						continue
					}
					linked++
					for _, f := range []string{doneMarker, "summary.json", filepath.Join("sub", "more")} {
						if sameFile(t, filepath.Join(rd, f), filepath.Join(src, f)) {
							t.Errorf("%s links %s's %s", rd, src, f)
						}
						a, errA := os.ReadFile(filepath.Join(rd, f))
						b, errB := os.ReadFile(filepath.Join(src, f))
						if errA != nil || errB != nil || !bytes.Equal(a, b) {
							t.Errorf("%s: %s differs from %s's: %v %v", rd, f, src, errA, errB)
						}
					}
					if !strings.Contains(text, fmt.Sprintf("identical to %s", relTo(out, src))) {
						t.Errorf("no line names %s as the run shared:\n%s", src, text)
					}
				}
			}
			if linked != c.wantShared {
				t.Errorf("%d runs linked, want %d", linked, c.wantShared)
			}
			// Resume: every run is done, none is simulated or shared again.
			prog.Reset()
			before := calls["second"]
			if err := Run(t.Context(), second, Options{Dir: filepath.Join(out, "second"), Progress: &prog, RunOne: runOne, Shared: shared}); err != nil {
				t.Fatal(err)
			}
			if calls["second"] != before || !strings.Contains(prog.String(), "6 of 6 runs already done") || strings.Contains(prog.String(), "shared") {
				t.Errorf("resumed a finished campaign:\n%s", prog.String())
			}
		})
	}
}

// sameFile says whether a and b are one file (b may be missing).
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
