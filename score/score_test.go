package score

import (
	"math"
	"testing"
)

func TestScores(t *testing.T) {
	// Deployment 1 from p4's view after p5 crashed (paper-facts: theta_c 9.9, theta_w 86.9):
	// RTTs to p3, p2 (slac) and p1 (fnal), 5 servers configured.
	rtts := []float64{9.88, 9.88, 77.06}
	for _, c := range []struct {
		name string
		got  func() (float64, bool)
		want float64
	}{
		{"theta_c", func() (float64, bool) { return ThetaC(rtts, 5) }, 9.88},
		{"theta_w", func() (float64, bool) { return ThetaW(rtts, 5) }, 9.88 + 77.06},
		// Equal rates of 100 req/s everywhere: 9.88 + (9.88+9.88+77.06)/4.
		{"theta_l", func() (float64, bool) { return ThetaL(rtts, []float64{100, 100, 100}, 100, 5) }, 9.88 + 96.82/4},
		{"theta_l idle", func() (float64, bool) { return ThetaL(rtts, []float64{0, 0, 0}, 0, 5) }, 9.88},
	} {
		v, ok := c.got()
		if !ok || math.Abs(v-c.want) > 1e-9 {
			t.Errorf("%s = %v, %v; want %v", c.name, v, ok, c.want)
		}
	}
	if _, ok := ThetaC([]float64{1}, 5); ok {
		t.Error("theta_c of a candidate reaching 2 of 5 servers is defined")
	}
}

func TestClass(t *testing.T) {
	for _, c := range []struct{ v, w, want float64 }{
		{19.99, 10, 10}, {20, 10, 20}, {2 * 10.0, 10, 20}, {0.1 + 0.2, 0.3, 0.3}, {7, 0, 7}, {7, -1, 7},
	} {
		if got := Class(c.v, c.w); got != c.want {
			t.Errorf("Class(%v, %v) = %v, want %v", c.v, c.w, got, c.want)
		}
	}
}
