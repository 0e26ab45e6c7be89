package etcd

import (
	"slices"
)

// CanWin is the set of members Raft may elect once the leader is gone: a survivor wins
// with the votes of a majority of the cluster (itself among them), and a member votes
// only for a candidate whose log is at least as up to date as its own (the last
// entry's term, then its index). logs holds what is known of each survivor's log, as
// its ELECTION events carry it (term<<32 | index); a survivor without one is taken to
// be as up to date as any. Whichever of the set times out first wins: with every
// survivor in sync, that is any of them.
func CanWin(survivors []int, n int, logs map[int]uint64) []int {
	quorum := n/2 + 1
	var out []int
	for _, c := range survivors {
		lc, known := logs[c]
		votes := 0
		for _, v := range survivors {
			lv, ok := logs[v]
			if !known || !ok || lv <= lc {
				votes++
			}
		}
		if votes >= quorum {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
