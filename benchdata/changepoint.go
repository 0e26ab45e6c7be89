package benchdata

// ChangePointAlpha is the significance a split must reach to be a change point; far
// below Compare's alpha because binary segmentation tries every split of a segment.
const ChangePointAlpha = 0.001

// MinSegment is the fewest nights on each side of a change point.
const MinSegment = 2

// ChangePoints finds where a metric's level shifts in a series of nights (each night's
// samples, oldest first) and returns the indexes of the nights that start a new level.
//
// The method is binary segmentation (Scott & Knott 1974; Vostrikova 1981) with the
// Mann-Whitney U test as the split criterion: within a segment, every split leaving
// MinSegment nights on each side is scored by the p-value of the test between the
// pooled samples left and right of it; the best split is a change point if its p is
// below ChangePointAlpha, and both halves are searched again. Then a change point
// whose neighbouring segments' medians differ by less than the metric's minimum effect
// (the noise floor Compare uses) is dropped, its segments merged, until none is left.
// (The effect is checked after segmenting: a bump that comes and goes leaves the
// medians of the two halves of the first split equal.)
// E-divisive (Matteson & James 2014, as MongoDB's signal processing uses) finds
// distribution changes too, but needs a permutation test; a shift of level is what a
// regression looks like here.
func ChangePoints(nights [][]float64, eff MinEffect) []int {
	var out []int
	var segment func(lo, hi int)
	segment = func(lo, hi int) {
		best, bestP := -1, 1.0
		for s := lo + MinSegment; s <= hi-MinSegment; s++ {
			left, right := pool(nights[lo:s]), pool(nights[s:hi])
			if len(left) == 0 || len(right) == 0 {
				continue
			}
			t, err := MannWhitney(left, right)
			if err != nil || t.P >= bestP {
				continue
			}
			best, bestP = s, t.P
		}
		if best < 0 || bestP >= ChangePointAlpha {
			return
		}
		segment(lo, best)
		out = append(out, best)
		segment(best, hi)
	}
	segment(0, len(nights))
	for {
		drop := -1
		for i, cp := range out {
			lo, hi := 0, len(nights)
			if i > 0 {
				lo = out[i-1]
			}
			if i+1 < len(out) {
				hi = out[i+1]
			}
			before, after := Median(pool(nights[lo:cp])), Median(pool(nights[cp:hi]))
			if abs(after-before) < eff.Threshold(before) {
				drop = i
				break
			}
		}
		if drop < 0 {
			return out
		}
		out = append(out[:drop], out[drop+1:]...)
	}
}

func pool(nights [][]float64) []float64 {
	var all []float64
	for _, n := range nights {
		all = append(all, n...)
	}
	return all
}
