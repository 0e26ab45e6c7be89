package netem

import (
	"fmt"
	"math"
	"sync"
)

// The distribution tables netem draws its jitter from. iproute2 generates them at build
// time with the NIST Net programs netem/{normal,pareto,paretonormal}.c and ships them as
// /usr/lib/<arch>/tc/<name>.dist; tc sends them to the kernel as TCA_NETEM_DELAY_DIST.
// The code below follows the same arithmetic step by step (same loop, same float64
// operations, round half to even like rint), so the tables are bit-for-bit equal to
// Debian's files (TestTablesMatchDebian).

const (
	// DistScale is NETEM_DIST_SCALE: a table entry t stands for t/DistScale standard
	// deviations.
	DistScale = 8192
	// TableSize is the number of entries in each generated table.
	TableSize = 4096

	// The generators tabulate the inverse CDF at 16384 points and keep every 4th.
	genSize = 16384
	paretoA = 3.0
)

// Distribution names accepted in a Link.
const (
	DistPareto       = "pareto"
	DistNormal       = "normal"
	DistParetoNormal = "paretonormal"
	DistUniform      = "uniform" // netem's built-in uniform jitter: no table
)

// Dists lists the distribution names a Link may use.
var Dists = []string{DistPareto, DistNormal, DistParetoNormal, DistUniform}

// tables makes each table on its first use: a run uses one or two, and the normal
// inverse they start from is 400,000 calls of math.Erf (a few ms of every run).
var tables = map[string]func() []int16{
	DistPareto:       sync.OnceValue(paretoTable),
	DistNormal:       sync.OnceValue(normalTable),
	DistParetoNormal: sync.OnceValue(paretoNormalTable),
}

// Table returns the TableSize-entry table iproute2 generates for dist (scale DistScale).
// It returns nil for "uniform", which uses no table, and an error for an unknown name.
// The slice is a copy: the caller may keep or change it.
func Table(dist string) ([]int16, error) {
	if dist == DistUniform {
		return nil, nil
	}
	t, err := table(dist)
	return append([]int16(nil), t...), err
}

// table is Table without the copy, for internal read-only use.
func table(dist string) ([]int16, error) {
	if dist == DistUniform {
		return nil, nil
	}
	t, ok := tables[dist]
	if !ok {
		return nil, fmt.Errorf("unknown distribution %q (want one of %v)", dist, Dists)
	}
	return t(), nil
}

// paretoValue is entry k of the Pareto (a=3) table: the scaled inverse CDF at
// u = (65536-16k)/65536, shifted by the mean 1.5 and scaled by 4/3 (pareto.c).
func paretoValue(k int) int {
	u := float64(65536-16*k) / 65536
	v := 1.0 / math.Pow(u, 1.0/paretoA)
	v -= 1.5
	v *= (4.0 / 3.0) * DistScale
	if v > 32767 {
		v = 32767
	}
	return int(math.RoundToEven(v))
}

func paretoTable() []int16 {
	t := make([]int16, TableSize)
	for k := range t {
		t[k] = int16(paretoValue(k))
	}
	return t
}

// normalInverse tabulates the inverse of the standard normal CDF the way normal.c does:
// it walks x from -10 in steps of 0.00005 (accumulating, rounding error included) and
// stores, for each i = rint(16384*Phi(x)), the last x that maps to it.
var normalInverse = sync.OnceValue(func() []float64 {
	inv := make([]float64, genSize+1)
	step, sqrt2 := 0.00005, math.Sqrt(2.0)
	for x := -10.0; x < 10.05; x += step {
		// float64(...) keeps the compiler from fusing the multiply-add: C does not.
		p := 0.5 + float64(0.5*math.Erf(x/sqrt2))
		i := int(math.RoundToEven(genSize * p))
		inv[i] = x
	}
	return inv
})

func clampShort(v int) int16 {
	return int16(min(max(v, math.MinInt16), math.MaxInt16))
}

func normalTable() []int16 {
	inv := normalInverse()
	t := make([]int16, TableSize)
	for k := range t {
		t[k] = clampShort(int(math.RoundToEven(inv[4*k] * DistScale)))
	}
	return t
}

// paretoNormalTable is .25*normal + .75*pareto, in integers with C's truncating
// division (paretonormal.c).
func paretoNormalTable() []int16 {
	inv := normalInverse()
	t := make([]int16, TableSize)
	for k := range t {
		norm := int(math.RoundToEven(inv[4*k] * DistScale))
		t[k] = clampShort((norm + 3*paretoValue(k)) / 4)
	}
	return t
}
