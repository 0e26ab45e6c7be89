package zab

import "testing"

// TestPeerSlots: small ids take the slice, others the map; both answer alike.
func TestPeerSlots(t *testing.T) {
	for _, peers := range [][]int{{1, 2, 3}, {3, 1}, {2, maxDenseID, 7}, {-4, 9}} {
		s := newPeerSlots(peers)
		for i, p := range peers {
			if got, ok := s.of(p); !ok || got != i {
				t.Errorf("%v: of(%d) = %d, %v; want %d, true", peers, p, got, ok, i)
			}
		}
		for _, id := range []int{0, 4, 5, -1, maxDenseID + 1} {
			if _, ok := s.of(id); ok {
				t.Errorf("%v: of(%d) found a peer", peers, id)
			}
		}
	}
}
