package analysis

import (
	"fmt"
	"slices"
	"time"

	"github.com/polebench/polebench/workload"
)

// Events are a run's instants as offsets from its start (the workload's clock). The
// caller, the runner, takes them from the events file. Zero means "did not happen" for
// every field but WarmupEnd.
type Events struct {
	WarmupEnd   time.Duration // the "before" window starts here
	Crash       time.Duration // the initial leader was killed
	Elected     time.Duration // the new leader was elected
	Leading     time.Duration // the new leader recognized itself as leader (LEADING)
	FirstCommit time.Duration // the new leader processed its first request
	End         time.Duration // end of the run; zero: the last intended send
	// Leaders, by server id (0 if unknown).
	InitialLeader, NewLeader int
	// ElectionZxids is the last zxid each server proposed with in the election that
	// followed the crash: the history oracle's scores, which the model takes as equal.
	ElectionZxids map[int]uint64
	// Leadings is how many times the new leader went LEADING between the crash and
	// its first commit (more than one: its first attempt failed, and recovery counts
	// from the last).
	Leadings int
	// FailedFaults are the faults the nemesis could not carry out, as "kind of pN at
	// T: error": the run did not get the schedule it planned.
	FailedFaults []string
	// InitLimits are the recoveries ended by their init limit (LOOKING with
	// event.InitLimitPrefix), as "at T s: what waited for what".
	InitLimits []string
	// Placed is what a placement controller did after the crash.
	Placed Placed
}

// DefaultSettle is how long after the election the "after" window starts (the paper:
// steady state from 10 s after the new leader is elected).
const DefaultSettle = 10 * time.Second

// All is the key of the statistics over every DC.
const All = "all"

// Window is the half-open interval [From, To) of intended send times.
type Window struct {
	Name     string
	From, To time.Duration
}

func (w Window) contains(t time.Duration) bool { return t >= w.From && t < w.To }

// Windows returns "before" (warm-up end to the crash, or to the end without a crash) and,
// with a crash, "after" (settle after the election, or after LEADING when the election
// time is unknown, to the end); when a placement controller moved the leader, "after"
// and "placed" as placedWindows has them. end is used when e.End is zero.
func (e Events) Windows(settle, end time.Duration) ([]Window, error) {
	if e.End > 0 {
		end = e.End
	}
	if e.WarmupEnd < 0 || e.WarmupEnd >= end {
		return nil, fmt.Errorf("analysis: warm-up end %v not within the run (end %v)", e.WarmupEnd, end)
	}
	if e.Crash == 0 {
		return []Window{{"before", e.WarmupEnd, end}}, nil
	}
	if e.Crash <= e.WarmupEnd || e.Crash > end {
		return nil, fmt.Errorf("analysis: crash at %v not after the warm-up (%v) and within the run (end %v)", e.Crash, e.WarmupEnd, end)
	}
	ws := []Window{{"before", e.WarmupEnd, e.Crash}}
	elected := e.Elected
	if elected == 0 {
		elected = e.Leading
	}
	if elected == 0 {
		return ws, nil // no new leader: nothing is steady after the crash
	}
	if elected < e.Crash {
		return nil, fmt.Errorf("analysis: new leader elected at %v, before the crash at %v", elected, e.Crash)
	}
	if from := elected + settle; from < end {
		ws = append(ws, Window{"after", from, end})
	}
	return e.placedWindows(ws, settle, end), nil
}

// LatencyStats describes the latency (done − intended) of one DC in one window, in ms,
// over the acknowledged requests; Failed and Unknown count the others.
type LatencyStats struct {
	Count   int      `json:"count"`
	Mean    float64  `json:"mean"`
	P50     float64  `json:"p50"`
	P99     float64  `json:"p99"`
	Max     float64  `json:"max"`
	Failed  int      `json:"failed"`
	Unknown int      `json:"unknown"`
	ModelMS *float64 `json:"model_ms,omitempty"` // the analytic model's predicted mean, if given
}

// Latencies returns each DC's latency stats in w, and the stats of all DCs under All.
// A DC with no request in w has no entry.
func Latencies(recs []workload.Record, w Window) map[string]LatencyStats {
	type bucket struct {
		st LatencyStats
		ds []time.Duration
	}
	buckets := map[string]*bucket{}
	for i := range recs {
		r := &recs[i]
		if !w.contains(r.Intended) {
			continue
		}
		for _, k := range [2]string{r.DC, All} {
			b := buckets[k]
			if b == nil {
				b = &bucket{}
				buckets[k] = b
			}
			switch r.Outcome {
			case workload.OK:
				b.ds = append(b.ds, r.Latency())
			case workload.Failed:
				b.st.Failed++
			default:
				b.st.Unknown++
			}
		}
	}
	// Sorted as durations: ms is monotonic, so their ms come out in the order sorting
	// the floats would give, at a fraction of the cost.
	out := make(map[string]LatencyStats, len(buckets))
	for k, b := range buckets {
		slices.Sort(b.ds)
		st := b.st
		st.Count = len(b.ds)
		if n := len(b.ds); n > 0 {
			var sum float64
			for _, d := range b.ds {
				sum += ms(d)
			}
			st.Mean, st.P50, st.P99, st.Max = sum/float64(n), ms(b.ds[rank(n, 0.5)]), ms(b.ds[rank(n, 0.99)]), ms(b.ds[n-1])
		}
		out[k] = st
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lastIntended is the end of a run whose end is not given.
func lastIntended(recs []workload.Record) time.Duration {
	var end time.Duration
	for _, r := range recs {
		end = max(end, r.Intended)
	}
	return end + 1 // windows are half-open
}
