package trial

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/workload"
)

// Read reads a stored run: its test (from the resolved spec, in dir or, for a
// repetition rep<N>, in the set's directory above), its history and what was derived
// from it, as the store kept them.
func Read(dir string) (*Test, *History, *Derived, error) {
	t, err := readTest(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	h, d := &History{}, &Derived{}
	var srv servers
	errs := []error{readJSON(filepath.Join(dir, ServersFile), &srv)}
	h.Backend, h.Flavor, h.Label, h.Links, h.Servers = srv.Backend, srv.Flavor, srv.Label, srv.Links, srv.Servers
	if h.Timeline, err = record.ReadEvents(filepath.Join(dir, EventsFile)); err != nil {
		errs = append(errs, err)
	}
	if h.Records, err = workload.LoadRecords(filepath.Join(dir, RecordsFile)); err != nil {
		errs = append(errs, err)
	}
	if err := readJSON(filepath.Join(dir, RTTsFile), &h.RTTs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	var ver workload.Verification
	if err := readJSON(filepath.Join(dir, VerificationFile), &ver); err == nil {
		h.Verification = &ver
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if d.Paths, err = analysis.ReadPaths(filepath.Join(dir, PathsFile)); err != nil {
		errs = append(errs, err)
	}
	if err := readJSON(filepath.Join(dir, JoinFile), &d.Join); err != nil {
		errs = append(errs, err)
	}
	if _, err := os.Stat(filepath.Join(dir, HostFile)); err == nil {
		if d.Host, err = readHost(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, nil, fmt.Errorf("run %s: %w", dir, err)
	}
	return t, h, d, nil
}

// readTest is the test a run directory was made with.
func readTest(dir string) (*Test, error) {
	setDir, n := dir, 1
	if _, err := os.Stat(filepath.Join(dir, ResolvedSpecFile)); err != nil {
		base := filepath.Base(dir)
		k, perr := strconv.Atoi(strings.TrimPrefix(base, "rep"))
		if !strings.HasPrefix(base, "rep") || perr != nil || k < 1 {
			return nil, fmt.Errorf("%s: not a run directory (no %s in it, and it is not a repetition rep<N>)", dir, ResolvedSpecFile)
		}
		setDir, n = filepath.Dir(dir), k
	}
	sp, err := ReadSpec(setDir)
	if err != nil {
		return nil, err
	}
	t, err := New(sp, n)
	if err != nil {
		return nil, err
	}
	// The plan as it was applied: the same as the spec gives for the seed, unless the
	// code that draws it changed since.
	if p, err := netem.ReadPlan(filepath.Join(dir, LinksFile)); err == nil {
		t.Plan = p
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return t, nil
}

// ReadSpec reads the resolved spec of a run (or repetition set's) directory.
func ReadSpec(dir string) (*spec.Spec, error) {
	path := filepath.Join(dir, ResolvedSpecFile)
	sp := &spec.Spec{}
	if err := readJSON(path, sp); err != nil {
		return nil, err
	}
	return sp, nil
}

// AnalyzeDir analyses a stored run again with the current code, rewriting its analysis
// files; in a repetition set's directory, every repetition and the set's aggregate.
func AnalyzeDir(dir string, log *slog.Logger) ([]*analysis.Summary, error) {
	if _, err := os.Stat(filepath.Join(dir, EventsFile)); err == nil {
		t, h, d, err := Read(dir)
		if err != nil {
			return nil, err
		}
		sum, err := Analyse(dir, t, h, d, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		return []*analysis.Summary{sum}, nil
	}
	sp, err := ReadSpec(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: not a run, a repetition set or a campaign: %w", dir, err)
	}
	var sums []*analysis.Summary
	for n := 1; n <= sp.Repetitions; n++ {
		rd := RepetitionDir(dir, n, sp.Repetitions)
		if _, err := os.Stat(filepath.Join(rd, EventsFile)); err != nil {
			continue // a repetition that did not get as far as its history
		}
		s, err := AnalyzeDir(rd, log)
		if err != nil {
			return sums, err
		}
		sums = append(sums, s...)
	}
	if len(sums) == 0 {
		return nil, fmt.Errorf("%s: no repetition with a history in it", dir)
	}
	if len(sums) > 1 {
		agg, err := analysis.AggregateRuns(sums)
		if err != nil {
			return sums, err
		}
		return sums, WriteAggregate(dir, agg)
	}
	return sums, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
