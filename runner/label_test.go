package runner

import (
	"regexp"
	"sync"
	"testing"

	"github.com/polebench/polebench/cluster"
)

// TestNewLabel: labels given out at the same moment by parallel runs differ, and
// have the form `polebench cluster down` takes.
func TestNewLabel(t *testing.T) {
	form := regexp.MustCompile(`^r[0-9]{7}$`)
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				l := newLabel()
				mu.Lock()
				if seen[l] {
					t.Errorf("label %s given out twice", l)
				}
				seen[l] = true
				mu.Unlock()
				if !form.MatchString(l) {
					t.Errorf("label %q is not r and seven digits", l)
				}
				if err := cluster.CheckLabel(l); err != nil {
					t.Errorf("label %q: %v", l, err)
				}
			}
		})
	}
	wg.Wait()
}
