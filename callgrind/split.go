package callgrind

import "strings"

// Part is one share of a run's instructions: those executed in its functions' own
// code (callgrind's self cost).
//
// Not the inclusive cost: callgrind follows calls with a shadow stack that Go's
// goroutine switches corrupt, so a Go program's inclusive costs are fiction (in a 10 s
// two-dc run, calls into csvfile and gzip "included" 12 G instructions of a 1.8 G
// run: runtime.mcall calling csvfile, gzip calling back into its caller). Self costs
// are exact. What a part calls in a package of another part counts there, so a
// part's share is the code of its packages, and the runtime's (allocation, the
// collector, maps, memmove) is a part of its own.
type Part struct {
	Name string
	// Prefixes match a function's full name (package path, then "." and the rest):
	// a package path with its dot ("github.com/x/sim."), or a package and a function's
	// first letters for a package that does several parts' work.
	Prefixes []string
}

// Share is a part's instructions.
type Share struct {
	Name         string
	Instructions uint64
}

// Split divides p's total into parts, the first whose prefix matches a function
// owning its self cost, and "other": the functions no part names.
func (p *Profile) Split(parts []Part) []Share {
	out := make([]Share, len(parts)+1)
	for k, pt := range parts {
		out[k].Name = pt.Name
	}
	out[len(parts)].Name = "other"
	var named uint64
	for fn, ir := range p.Self {
		k := partOf(parts, fn)
		out[k].Instructions += ir
		named += ir
	}
	// Instructions callgrind gave no function (none, in practice) are other's too.
	if p.Total > named {
		out[len(parts)].Instructions += p.Total - named
	}
	return out
}

func partOf(parts []Part, fn string) int {
	for k, pt := range parts {
		for _, pre := range pt.Prefixes {
			if strings.HasPrefix(fn, pre) {
				return k
			}
		}
	}
	return len(parts)
}
