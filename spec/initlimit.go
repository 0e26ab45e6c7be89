package spec

import (
	"time"

	"github.com/polebench/polebench/netem"
)

// DefaultInitLimit is a server's patience to recover when the state is small or the
// links unlimited: the sample initLimit of Zab's reference configuration (10 ticks of
// 2 s), as zab.DefaultInitLimit.
const DefaultInitLimit = 20 * time.Second

// InitLimitFor is how long a server of a run on plan may take to recover, election
// to serving: init_limit, or by default DefaultInitLimit plus twice the time the
// whole state (the preload and every key's payload) takes over plan's slowest
// rate-limited link. A new leader behind its quorum, or a follower behind it, may
// have to receive all of it over that link before it serves (docs/links.md); twice,
// for the snapshot's own overhead and the traffic beside it.
func (s *Spec) InitLimitFor(p netem.Plan) time.Duration {
	if s.InitLimit > 0 {
		return s.InitLimit
	}
	var slowest uint64
	for _, l := range p.Links {
		if r := l.RateBytesPerSec; r > 0 && (slowest == 0 || r < slowest) {
			slowest = r
		}
	}
	if slowest == 0 {
		return DefaultInitLimit
	}
	state := float64(s.PreloadMB)*(1<<20) + float64(s.Workload.Keys)*float64(s.Workload.PayloadBytes)
	transfer := time.Duration(state / float64(slowest) * float64(time.Second))
	return DefaultInitLimit + (2 * transfer).Round(time.Second)
}
