package nightly

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/local"
	"github.com/polebench/polebench/cluster/zookeeper"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/zkcompat"
)

// KindKazoo runs kazoo's own test suite (package zkcompat) on Debian's ZooKeeper and
// then on poled, the same command with PATH changed; the entry fails when a test that
// passed on ZooKeeper that night does not pass on poled (zkcompat.Compare, its listed
// exceptions aside). Its metrics are each flavor's passed, failed and skipped tests
// and the compatibility problems, for compare to follow over the nights.
const KindKazoo = "kazoo"

// Kazoo is a kazoo entry's run: the suite's modules and the ensemble's size.
type Kazoo struct {
	Modules []string
	Size    int
}

var kazooFlavors = []string{backend.FlavorZooKeeper, backend.FlavorPoled}

func applyKazoo(e *Entry, sets []spec.Setting) (int, error) {
	k := &Kazoo{Modules: zkcompat.AllModules, Size: 3}
	for i, st := range sets {
		switch st.Name {
		case "modules":
			switch st.Value {
			case "all":
				k.Modules = zkcompat.AllModules
			case "ci":
				k.Modules = zkcompat.CIModules
			default:
				k.Modules = strings.Split(st.Value, ",")
				for _, m := range k.Modules {
					if !slices.Contains(zkcompat.AllModules, m) {
						return i, fmt.Errorf("%s: %q is not a module of kazoo's suite (all, ci, or some of %s)", st, m, strings.Join(zkcompat.AllModules, ", "))
					}
				}
			}
		case "size":
			n, err := strconv.Atoi(st.Value)
			if err != nil || n < 1 {
				return i, fmt.Errorf("%s: %q is not a number of servers", st, st.Value)
			}
			k.Size = n
		default:
			return i, fmt.Errorf("unknown setting %q of kind %s (known: modules, size)", st.Name, KindKazoo)
		}
	}
	e.Kazoo = k
	return -1, nil
}

// kazooPerModule is a module's time on both flavors: a whole run, 24 modules, took
// 5m12s on ZooKeeper and 2m11s on poled.
const kazooPerModule = 18500 * time.Millisecond

func plannedKazoo(e Entry) time.Duration { return time.Duration(len(e.Kazoo.Modules)) * kazooPerModule }

func kazooWhere(e Entry) string {
	return fmt.Sprintf("kazoo's harness, %d servers: %s", e.Kazoo.Size, strings.Join(kazooFlavors, ", "))
}

func checkKazoo(context.Context, Entry) error {
	return errors.Join(zkcompat.Available(), zookeeper.Available())
}

// runKazoo writes, per flavor, dir/FLAVOR/results.txt (a line a test) and pytest.log,
// and dir/table.txt and dir/bench.json for both.
func runKazoo(ctx context.Context, e Entry, dir string, env runEnv) error {
	launcher := filepath.Join(dir, "launcher")
	if err := os.MkdirAll(launcher, 0o755); err != nil {
		return err
	}
	poled, err := local.Poled(ctx, env.log)
	if err != nil {
		return err
	}
	if err := zkcompat.Launcher(launcher, poled); err != nil {
		return err
	}
	results := map[string]zkcompat.Results{}
	took := map[string]time.Duration{}
	for _, flavor := range kazooFlavors {
		r := zkcompat.Run{Modules: e.Kazoo.Modules, Size: e.Kazoo.Size, Dir: filepath.Join(dir, flavor)}
		if flavor == backend.FlavorPoled {
			r.Launcher = launcher
		}
		t0 := time.Now()
		res, err := runKazooOnce(ctx, r)
		if err != nil {
			return fmt.Errorf("%s: %w", flavor, err)
		}
		results[flavor], took[flavor] = res, time.Since(t0)
	}
	problems := zkcompat.Compare(results[backend.FlavorZooKeeper], results[backend.FlavorPoled], e.Kazoo.Modules, true)
	table := kazooTable(e, results, took, problems)
	env.line.Note("%s", strings.TrimRight(table, "\n"))
	if err := os.WriteFile(filepath.Join(dir, "table.txt"), []byte(table), 0o644); err != nil {
		return err
	}
	if err := kazooMetrics(results, took, problems).WriteFile(filepath.Join(dir, benchdata.FileName)); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("poled is not where ZooKeeper is on kazoo's suite: %s", strings.Join(problems, "; "))
	}
	return nil
}

// runKazooOnce runs the suite into r.Dir, its output in pytest.log and its outcomes
// in results.txt.
func runKazooOnce(ctx context.Context, r zkcompat.Run) (zkcompat.Results, error) {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(r.Dir, "pytest.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	r.Log = log
	res, err := r.Do(ctx)
	if err != nil {
		return nil, err
	}
	return res, os.WriteFile(filepath.Join(r.Dir, "results.txt"), res.Format(), 0o644)
}

func kazooTable(e Entry, results map[string]zkcompat.Results, took map[string]time.Duration, problems []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kazoo's suite, %d modules, %d servers\n", len(e.Kazoo.Modules), e.Kazoo.Size)
	fmt.Fprintf(&b, "%-10s %7s %7s %8s %7s\n", "", "passed", "failed", "skipped", "time")
	for _, f := range kazooFlavors {
		p, fl, s := results[f].Counts()
		fmt.Fprintf(&b, "%-10s %7d %7d %8d %7v\n", f, p, fl, s, took[f].Round(time.Second))
	}
	if len(problems) == 0 {
		b.WriteString("every test that passed on zookeeper passed on poled (the listed exceptions aside)\n")
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	return b.String()
}

func kazooMetrics(results map[string]zkcompat.Results, took map[string]time.Duration, problems []string) *benchdata.File {
	one := func(name, unit string, better benchdata.Better, min benchdata.MinEffect, v float64) benchdata.Metric {
		return benchdata.Metric{Name: name, Unit: unit, Better: better, MinEffect: min, Samples: []float64{v}}
	}
	count := benchdata.MinEffect{Abs: 1}
	f := &benchdata.File{Format: benchdata.FormatVersion, Metrics: []benchdata.Metric{
		one("problems", "tests", benchdata.Lower, count, float64(len(problems))),
	}}
	for _, fl := range kazooFlavors {
		p, failed, s := results[fl].Counts()
		f.Metrics = append(f.Metrics,
			one(fl+".passed", "tests", benchdata.Higher, count, float64(p)),
			one(fl+".failed", "tests", benchdata.Lower, count, float64(failed)),
			one(fl+".skipped", "tests", benchdata.Neither, count, float64(s)),
			one(fl+".seconds", "s", benchdata.Neither, benchdata.MinEffect{Rel: 0.2}, took[fl].Seconds()))
	}
	return f
}
