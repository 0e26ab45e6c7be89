package trial

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/workload"
)

// Files of a run directory that hold its test and history (the analysis writes its own:
// summary.json, timeseries.csv, hdr-*.hlog, the plots).
const (
	SpecFile         = "spec.yaml"          // the spec as written
	ResolvedSpecFile = "spec.resolved.json" // the spec with its defaults and overrides
	LinksFile        = "links.json"         // the link plan
	ServersFile      = "servers.json"
	EventsFile       = "events.jsonl"
	RecordsFile      = "requests.csv.gz"
	RTTsFile         = "rtts.json"
	VerificationFile = "verification.json"
	PathsFile        = "phases.csv.gz"    // the anatomy's join of records and trace marks
	JoinFile         = "phases.join.json" // how much of the run that join covered
	HiccupsFile      = "hiccups.csv"      // every stall of a metered process
	HostFile         = "host.csv"         // the host every 100 ms
	AggregateFile    = "aggregate.json"   // a repetition set's aggregate
)

// Store writes one run directory: the only writer of a run's test and history.
type Store struct {
	dir      string
	streamed bool // the records went to RecordsPath as they came
}

// Create makes the run directory dir for t and writes the link plan into it.
func Create(dir string, t *Test) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Store{dir: dir}, netem.WritePlan(filepath.Join(dir, LinksFile), t.Plan)
}

// Dir is the run directory.
func (s *Store) Dir() string { return s.dir }

// Path is the path of name in the run directory.
func (s *Store) Path(name string) string { return filepath.Join(s.dir, name) }

// RecordsPath is where an execution streams its records as they come (so that a crash
// keeps what was measured); Write then leaves them.
func (s *Store) RecordsPath() string {
	s.streamed = true
	return s.Path(RecordsFile)
}

// servers is servers.json.
type servers struct {
	Backend string           `json:"backend"`
	Flavor  string           `json:"flavor,omitempty"`
	Label   string           `json:"label,omitempty"`
	Links   string           `json:"links"`
	Servers []cluster.Server `json:"servers"`
}

// WriteServers writes who the servers are and where they listen, as soon as a cluster
// is up.
func (s *Store) WriteServers(h *History) error {
	return writeJSON(s.Path(ServersFile), servers{Backend: h.Backend, Flavor: h.Flavor, Label: h.Label, Links: h.Links, Servers: h.Servers})
}

// Write keeps h and what was derived from it: its servers, timeline, RTTs,
// verification, records (unless they were streamed), what its host did, and d's join.
func (s *Store) Write(h *History, d *Derived) error {
	written := make(chan error, 1)
	if s.streamed {
		written <- nil
	} else {
		// The records are written while the rest is (both only read them).
		go func() {
			w, err := workload.CreateRecords(s.Path(RecordsFile))
			if err == nil {
				err = errors.Join(w.Write(h.Records...), w.Close())
			}
			written <- err
		}()
	}
	errs := []error{
		s.WriteServers(h),
		record.WriteEvents(s.Path(EventsFile), h.Timeline),
		writeJSON(s.Path(RTTsFile), h.RTTs),
		analysis.WritePaths(s.Path(PathsFile), d.Paths),
		writeJSON(s.Path(JoinFile), d.Join),
	}
	if h.Verification != nil {
		errs = append(errs, writeJSON(s.Path(VerificationFile), h.Verification))
	}
	if h.Host != nil {
		errs = append(errs, s.writeHost(h.Host))
	}
	errs = append(errs, <-written)
	return errors.Join(errs...)
}

// WriteJSON writes v as name in the run directory (what a caller adds beside the
// history: a failing check's fault schedule, its servers' digests).
func (s *Store) WriteJSON(name string, v any) error { return writeJSON(s.Path(name), v) }

// WriteSpec writes the spec into a run (or repetition set's) directory: as written (a
// file, or a shipped one), then as resolved with defaults and overrides.
func WriteSpec(dir string, sp *spec.Spec) error {
	b, err := os.ReadFile(sp.File)
	if err != nil {
		b, err = spec.Shipped(sp.Name)
	}
	if err == nil {
		if err := os.WriteFile(filepath.Join(dir, SpecFile), b, 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, ResolvedSpecFile), sp)
}

// WriteAggregate writes a repetition set's aggregate.
func WriteAggregate(dir string, agg *analysis.Repetitions) error {
	return writeJSON(filepath.Join(dir, AggregateFile), agg)
}

// Dir makes the directory of a run of the spec named name: out, or by default
// results/<name>/<timestamp> with a results/<name>/latest link to it.
func Dir(out, name string) (string, error) {
	if out != "" {
		return out, os.MkdirAll(out, 0o755)
	}
	base := filepath.Join("results", name)
	dir := filepath.Join(base, time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	latest := filepath.Join(base, "latest")
	os.Remove(latest)
	if err := os.Symlink(filepath.Base(dir), latest); err != nil {
		return "", fmt.Errorf("latest link: %w", err)
	}
	return dir, nil
}

// RepetitionDir is repetition n's directory in a set of reps: dir itself for one.
func RepetitionDir(dir string, n, reps int) string {
	if reps > 1 {
		return filepath.Join(dir, fmt.Sprintf("rep%d", n))
	}
	return dir
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
