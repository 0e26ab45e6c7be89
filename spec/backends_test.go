package spec

import (
	"slices"
	"testing"

	"github.com/polebench/polebench/cluster/backend"

	// The backends register their names (and the flavors they run) from their
	// packages' init: the spec's checks see every one, as in the polebench command.
	_ "github.com/polebench/polebench/cluster/all"
)

// The spec knows the backends the program links, in their fixed order; the default is
// one of them.
func TestBackendNames(t *testing.T) {
	want := []string{backend.Local, backend.Netns, backend.Docker, backend.Swarm, backend.Sim}
	if got := backend.Names(); !slices.Equal(got, want) {
		t.Errorf("backend.Names() = %v, want %v", got, want)
	}
	if !slices.Contains(backend.Names(), DefaultBackend) {
		t.Errorf("the default backend %q is not registered", DefaultBackend)
	}
}
