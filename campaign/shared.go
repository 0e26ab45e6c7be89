package campaign

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// Shared is the simulated runs that the campaigns of one reproduce finished, by what
// determines them (runKey). The simulator is deterministic, so a figure whose run has
// the key of one another figure finished (Fig. 7c's are Fig. 7b's) links that run's
// files instead of simulating it again. Real backends' runs are measurements and are
// never shared. Safe for concurrent use.
type Shared struct {
	mu      sync.Mutex
	done    map[string]string // key -> a run directory that finished without error
	planned map[string]bool   // keys of the runs that planned campaigns simulate
}

// NewShared returns an empty registry.
func NewShared() *Shared {
	return &Shared{done: map[string]string{}, planned: map[string]bool{}}
}

// find returns a finished run with key ("" for none).
func (s *Shared) find(key string) string {
	if s == nil || key == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[key]
}

// add records a run that finished without error; the first one of a key stays.
func (s *Shared) add(key, dir string) {
	if s == nil || key == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.done[key]; !ok {
		s.done[key] = dir
	}
}

// plan counts the runs of c in dir that are not done (todo) and, of those, the ones a
// campaign planned before it simulates (shared), as Run will share them once that
// campaign finished; it notes c's own for the campaigns planned after it. Reproduce
// plans its figures in the order it runs them, for the whole evaluation's ETA.
func (s *Shared) plan(c *Campaign, dir string) (todo, shared int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []string
	for _, p := range c.Points() {
		for rep := 1; rep <= c.Repetitions; rep++ {
			if Done(RunDir(dir, p, rep)) {
				continue
			}
			todo++
			sp, err := c.SpecFor(p, rep)
			if err != nil {
				continue
			}
			if k, ok := runKey(sp); ok {
				if s.planned[k] {
					shared++
				}
				mine = append(mine, k)
			}
		}
	}
	for _, k := range mine {
		s.planned[k] = true
	}
	return todo, shared
}

// runKey is what determines a campaign's simulated run of sp: the resolved spec, every
// field as spec.resolved.json holds it, the repetition's seed among them (a campaign's
// spec has one repetition, which the runner runs as repetition 1). ok is false for a
// real backend's run, which is a new measurement each time.
func runKey(sp *spec.Spec) (key string, ok bool) {
	if sp == nil || sp.Backend != backend.Sim {
		return "", false
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// history is the files in which a run keeps its test and history (trial's): written
// once, and left as they are by polebench analyze, so a shared run hard-links them.
// The analysis's files (summary.json, the plots) are copied: analyze rewrites them in
// place, which through a link would change the other figure's run too.
var history = map[string]bool{
	trial.SpecFile: true, trial.ResolvedSpecFile: true, trial.LinksFile: true, trial.ServersFile: true,
	trial.EventsFile: true, trial.RecordsFile: true, trial.RTTsFile: true, trial.VerificationFile: true,
	trial.PathsFile: true, trial.JoinFile: true, trial.HiccupsFile: true, trial.HostFile: true,
}

// linkRun fills dst with the files of the finished run src: its history hard-linked
// where the file system allows (the bulk of a run, then taking no space), the rest
// copied. src's done marker is not taken: the campaign writes dst's once dst is complete.
func linkRun(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case rel == doneMarker:
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", path)
		}
		if history[rel] && os.Link(path, to) == nil {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o666)
	})
}
