package swarm

import (
	"testing"

	"github.com/polebench/polebench/freeport"
)

// TestPortsBelowFreeport: the published ports (client PortBase+N, admin
// PortBase+100+N, N up to 99) lie below every port freeport hands the other backends'
// processes, so a swarm test beside them never publishes a port one of them bound.
func TestPortsBelowFreeport(t *testing.T) {
	if top := PortBase + 199; top >= freeport.Floor {
		t.Errorf("published ports reach %d, freeport hands out from %d", top, freeport.Floor)
	}
}
