package analysis

import (
	"math"
	"testing"
	"time"
)

func TestCheckRTTs(t *testing.T) {
	// Two DCs: p1, p2 in one (0.1 ms), p3 in the other (20 ms).
	plan := func(a, b int) time.Duration {
		if (a == 3) != (b == 3) {
			return 20 * time.Millisecond
		}
		return 100 * time.Microsecond
	}
	tests := []struct {
		name     string
		measured map[string]any
		want     *RTTCheck
	}{
		{"the worst inter-DC pair; within a DC left out", map[string]any{
			"p1": map[string]float64{"p2": 0.9, "p3": 21},
			"p2": map[string]float64{"p1": 0.9, "p3": 25},
			"p3": map[string]float64{"p1": 19, "p2": 20.5},
		}, &RTTCheck{MaxErrorPct: 25, Pair: "p2->p3", Pairs: 4}},
		// As read back from rtts.json.
		{"decoded JSON", map[string]any{"p1": map[string]any{"p3": 15.0}}, &RTTCheck{MaxErrorPct: 25, Pair: "p1->p3", Pairs: 1}},
		{"a tie goes to the first pair", map[string]any{
			"p3": map[string]float64{"p1": 22},
			"p1": map[string]float64{"p3": 18},
		}, &RTTCheck{MaxErrorPct: 10, Pair: "p1->p3", Pairs: 2}},
		{"only within a DC", map[string]any{"p1": map[string]float64{"p2": 0.1}}, nil},
		{"another flavor's shape", map[string]any{"members": []string{"a"}}, nil},
		{"nothing", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckRTTs(tc.measured, plan)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got != nil && (math.Abs(got.MaxErrorPct-tc.want.MaxErrorPct) > 1e-9 || got.Pair != tc.want.Pair || got.Pairs != tc.want.Pairs) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
