package score

import (
	"fmt"
	"strings"
	"time"
)

// Oracle names (Sec. 3.3 and 5 of the paper).
const (
	History    = "history"    // highest last zxid: ZooKeeper's own election
	Rotating   = "rotating"   // next id after the round's leader
	Request    = "request"    // highest request rate theta_r
	Consensus  = "consensus"  // lowest theta_c
	Latency    = "latency"    // lowest theta_l
	WorstCase  = "worst-case" // lowest theta_w
	Preference = "preference" // a static preference list
	Combined   = "combined"   // a priority order of scores with equivalence classes
)

// OracleNames lists every oracle name, the single-score ones first.
func OracleNames() []string {
	return []string{History, Rotating, Request, Consensus, Latency, WorstCase, Preference, Combined}
}

// ScoreNames are the scores a combined oracle may order by; each criterion is better
// lower (theta_c, theta_l, theta_w) or higher (zxid, request).
func ScoreNames() []string { return []string{"zxid", Request, Consensus, Latency, WorstCase} }

// Oracle configures how servers are ranked in an election.
type Oracle struct {
	Name       string      `json:"name"`
	Preference []int       `json:"preference,omitempty"` // Preference: ids, most preferred first
	Combined   []Criterion `json:"combined,omitempty"`   // Combined: compared in order; ties fall through to the next
	// Heartbeat is how often servers exchange heartbeats to estimate RTTs and rates
	// (the paper uses 1 s; 0 means the implementation's default).
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
}

// Criterion is one level of a combined oracle. Class, when positive, truncates the
// score to classes of that width (in the score's unit: ms, req/s, or zxid), so that
// servers within one class count as equally good (Sec. 5: "latency in 10 ms classes,
// then highest zxid" elects the fattest among the fastest).
type Criterion struct {
	Score string  `json:"score"`
	Class float64 `json:"class,omitempty"`
}

// Check reports whether o is a well-formed oracle for servers 1..n.
func (o Oracle) Check(n int) error {
	switch o.Name {
	case History, Rotating, Request, Consensus, Latency, WorstCase:
	case Preference:
		if len(o.Preference) == 0 {
			return fmt.Errorf("oracle preference needs a non-empty preference list")
		}
		seen := map[int]bool{}
		for _, id := range o.Preference {
			if id < 1 || id > n {
				return fmt.Errorf("preference list names server %d, not in 1..%d", id, n)
			}
			if seen[id] {
				return fmt.Errorf("preference list names server %d twice", id)
			}
			seen[id] = true
		}
	case Combined:
		if len(o.Combined) == 0 {
			return fmt.Errorf("oracle combined needs at least one criterion")
		}
		for _, c := range o.Combined {
			if !contains(ScoreNames(), c.Score) {
				return fmt.Errorf("combined oracle: unknown score %q (known: %s)", c.Score, strings.Join(ScoreNames(), ", "))
			}
			if c.Class < 0 {
				return fmt.Errorf("combined oracle: class %v of %s is negative", c.Class, c.Score)
			}
		}
	default:
		return fmt.Errorf("unknown oracle %q (known: %s)", o.Name, strings.Join(OracleNames(), ", "))
	}
	if o.Name != Preference && len(o.Preference) > 0 {
		return fmt.Errorf("a preference list is given but the oracle is %s", o.Name)
	}
	if o.Name != Combined && len(o.Combined) > 0 {
		return fmt.Errorf("combined criteria are given but the oracle is %s", o.Name)
	}
	if o.Heartbeat < 0 {
		return fmt.Errorf("heartbeat %v is negative", o.Heartbeat)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
