package topology

import "testing"

// TestRegionsPreset: the shipped table parses, covers every pair of its regions in
// both directions, and gives the published numbers (spot checks against the source).
func TestRegionsPreset(t *testing.T) {
	if n := len(Regions()); n != 12 {
		t.Errorf("%d regions, want 12", n)
	}
	for _, c := range []struct {
		a, b string
		want float64
	}{
		{"westeurope", "northeurope", 17},        // 17 both ways
		{"eastus", "westeurope", (85 + 83) / 2.}, // East US tab: West Europe row 85; Western Europe tab: East US row 83
		{"japaneast", "australiaeast", (104 + 103) / 2.},
		{"uksouth", "francecentral", (10 + 11) / 2.},
	} {
		got, ok := RegionRTT(c.a, c.b)
		if r, _ := RegionRTT(c.b, c.a); !ok || got != c.want || r != got {
			t.Errorf("RegionRTT(%s, %s) = %v, %v; want %v", c.a, c.b, got, ok, c.want)
		}
	}
	if _, ok := RegionRTT("westeurope", "atlantis"); ok || KnownRegion("atlantis") {
		t.Error("an unknown region has an RTT")
	}
	if _, err := parseRegions([]byte("source,destination,rtt_ms\na,b,5\n")); err == nil {
		t.Error("a table with one direction of a pair parsed")
	}
}
