package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// RTTCheck is how far the servers' own round-trip measurements (their heartbeat
// monitors', rtts.json) landed from the links' plan at the run's end. The election's
// scores are computed from these measurements, so a monitor that misreads its links
// misplaces the leader; how far is the nightly suite's to judge (rtt_error_pct_max),
// never a test's, since on a real backend it is the host's day as much as the code.
type RTTCheck struct {
	MaxErrorPct float64 `json:"max_error_pct"` // the largest |measured − plan| / plan, in %
	Pair        string  `json:"pair"`          // where: "p2->p1"
	Pairs       int     `json:"pairs"`         // the ordered pairs compared
}

// MinCheckedRTT leaves out the pairs planned below it (within a data center, 0.1 ms):
// there a monitor reads the host's own scheduling as much as the link.
const MinCheckedRTT = time.Millisecond

// CheckRTTs compares measured, rtts.json's "pA" → "pB" → ms, with plan. It is nil
// when nothing comparable was measured (a flavor whose rtts.json has another shape).
func CheckRTTs(measured map[string]any, plan func(a, b int) time.Duration) *RTTCheck {
	b, err := json.Marshal(measured)
	if err != nil {
		return nil
	}
	var by map[string]map[string]float64
	if json.Unmarshal(b, &by) != nil {
		return nil
	}
	var c RTTCheck
	for from, peers := range by {
		a, okA := serverID(from)
		for to, got := range peers {
			b, okB := serverID(to)
			want := plan(a, b)
			if !okA || !okB || want < MinCheckedRTT {
				continue
			}
			wantMS := float64(want) / float64(time.Millisecond)
			off := 100 * math.Abs(got-wantMS) / wantMS
			pair := fmt.Sprintf("%s->%s", from, to)
			// Ties go to the first pair in order, so the file does not depend on map order.
			if c.Pairs == 0 || off > c.MaxErrorPct || (off == c.MaxErrorPct && pair < c.Pair) {
				c.MaxErrorPct, c.Pair = off, pair
			}
			c.Pairs++
		}
	}
	if c.Pairs == 0 {
		return nil
	}
	return &c
}

func serverID(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "p"))
	return n, err == nil && strings.HasPrefix(name, "p")
}
