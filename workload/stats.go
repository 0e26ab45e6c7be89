package workload

import (
	"math"
	"slices"
	"time"
)

// Stats says whether a run kept its schedule and how its requests ended.
type Stats struct {
	OfferedRate   float64 `json:"offered_rate"`   // configured req/s, all DCs
	ScheduledRate float64 `json:"scheduled_rate"` // requests the schedule held per second (arrival.Poisson varies)
	AchievedRate  float64 `json:"achieved_rate"`  // requests handed to the client per second
	Requests      int     `json:"requests"`
	Sent          int     `json:"sent"`
	OK            int     `json:"ok"`
	Failed        int     `json:"failed"`
	Unknown       int     `json:"unknown"`
	SendLag       Lag     `json:"send_lag"` // sent − intended, first send of each request
}

// Lag is a distribution summary of the send lag.
type Lag struct {
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// ComputeStats summarizes records of a run paced for duration at offered req/s. The
// achieved rate is the number of requests sent over the pacing time, stretched to the
// last send when the pacer fell behind: a run that kept up has it equal to the scheduled
// rate (all requests over the pacing time), one that could not shows less.
func ComputeStats(recs []Record, duration time.Duration, offered float64) Stats {
	st := Stats{OfferedRate: offered, Requests: len(recs), SendLag: SendLag(recs, nil)}
	span := duration
	for _, r := range recs {
		switch r.Outcome {
		case OK:
			st.OK++
		case Failed:
			st.Failed++
		case Unknown:
			st.Unknown++
		}
		if r.WasSent() {
			st.Sent++
			span = max(span, r.Sent)
		}
	}
	if span > 0 {
		st.AchievedRate = float64(st.Sent) / span.Seconds()
	}
	if duration > 0 {
		st.ScheduledRate = float64(len(recs)) / duration.Seconds()
	}
	return st
}

// SendLag is the send lag (sent − intended) of the records that were sent and that
// keep, if not nil, accepts.
func SendLag(recs []Record, keep func(*Record) bool) Lag {
	var lags []time.Duration
	for i := range recs {
		if r := &recs[i]; r.WasSent() && (keep == nil || keep(r)) {
			lags = append(lags, r.Sent-r.Intended)
		}
	}
	if len(lags) == 0 {
		return Lag{}
	}
	slices.Sort(lags)
	return Lag{P50: rank(lags, 0.50), P99: rank(lags, 0.99), Max: lags[len(lags)-1]}
}

// rank is the nearest-rank quantile of sorted values.
func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted))-1e-9)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
