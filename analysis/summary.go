package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/polebench/polebench/model"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/polebench/polebench/workload"
)

// Input is what Summarize needs: the records, the runner's events and, optionally, the
// model's predictions and the read-back verdict.
type Input struct {
	Records []workload.Record
	Events  Events
	Settle  time.Duration // default DefaultSettle
	// Model holds the analytic model's predicted mean latency in ms per window name
	// ("before", "after") and DC (All allowed); each lands next to the measured mean.
	Model map[string]map[string]float64
	// PayloadBytes is the size of a write, for the bytes a server was behind.
	PayloadBytes int
	// Outdated are the servers the spec outdates: a warning says so when one was not
	// behind at the crash after all.
	Outdated []int
	// ModelNote says whom the model elects (and why history may differ).
	ModelNote              string
	LostAcknowledgedWrites int
	OfferedRate            float64 // req/s configured
	// Paths, if any, are the acknowledged writes' ways through the servers (Join):
	// the anatomy of their latency, split against PathModel (optional).
	Paths     []Path
	PathModel model.PathModel
	Join      *JoinStats
	// Host, if measured (real backends), is what the host did: each window gets its
	// verdict from it (HostVerdict).
	Host *HostInput
	// RTT is how far the servers' RTT measurements landed from the plan (CheckRTTs).
	RTT *RTTCheck
}

// Span is a window in seconds from the run's start.
type Span struct {
	From float64 `json:"from_s"`
	To   float64 `json:"to_s"`
}

// Requests counts outcomes over the whole run.
type Requests struct {
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
}

// LagMS is the send lag (sent − intended) in ms.
type LagMS struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Summary is a run's summary.json.
type Summary struct {
	InitialLeader int      `json:"initial_leader"`
	NewLeader     int      `json:"new_leader"`
	ModelNote     string   `json:"model_note,omitempty"`
	ElectionMS    *float64 `json:"election_ms"` // crash → new leader elected; null without both
	RecoveryMS    *float64 `json:"recovery_ms"` // LEADING → first request processed
	// ElectionZxids: server id → the last zxid it proposed with after the crash.
	ElectionZxids map[int]uint64 `json:"election_zxids,omitempty"`
	// BehindAtCrash: for each server that proposed in the election after the crash,
	// the acknowledged writes it lacked against the most up-to-date one.
	BehindAtCrash map[int]Behind `json:"behind_at_crash,omitempty"`
	// PlacedLeader is whom a placement controller placed the leader on after the
	// crash; TransferMS its move to that leader's first commit (null: it kept Raft's
	// winner), PlacedServingMS the crash to that commit (the election and the transfer).
	PlacedLeader    int      `json:"placed_leader,omitempty"`
	TransferMS      *float64 `json:"transfer_ms,omitempty"`
	PlacedServingMS *float64 `json:"placed_serving_ms,omitempty"`
	Warnings        []string `json:"warnings,omitempty"`
	Windows         struct {
		Before *Span `json:"before,omitempty"`
		After  *Span `json:"after,omitempty"`
		Placed *Span `json:"placed,omitempty"`
	} `json:"windows"`
	// LatencyMS holds, per window name and DC (and All), the measured latency stats.
	LatencyMS              map[string]map[string]LatencyStats `json:"latency_ms"`
	Requests               Requests                           `json:"requests"`
	LostAcknowledgedWrites int                                `json:"lost_acknowledged_writes"`
	SendLagMS              LagMS                              `json:"send_lag_ms"` // over the before and after windows
	OfferedRate            float64                            `json:"offered_rate"`
	ScheduledRate          float64                            `json:"scheduled_rate"`
	AchievedRate           float64                            `json:"achieved_rate"`
	// Anatomy holds, per window and DC, the mean of each phase of a write and where
	// the time above the model went (from the servers' traces).
	Anatomy map[string]map[string]AnatomyStats `json:"anatomy,omitempty"`
	// AnatomyJoin says how many acknowledged writes the traces covered.
	AnatomyJoin *JoinStats `json:"anatomy_join,omitempty"`
	// Host holds, per window, what the host did and the verdict on the window's
	// numbers (real backends; the simulator has no host).
	Host map[string]*HostWindow `json:"host,omitempty"`
	// RTT is how far the servers' RTT measurements landed from the links' plan.
	RTT *RTTCheck `json:"rtt,omitempty"`
}

// Behind is how far a server was behind the most up-to-date one at the election.
type Behind struct {
	Transactions int   `json:"transactions"` // acknowledged writes it lacked
	Bytes        int64 `json:"bytes"`        // their payload
}

// behind counts, for each server's election zxid, the acknowledged writes (by their
// zxids in the records) above it, up to the highest election zxid.
func behind(zxids map[int]uint64, recs []workload.Record, payload int) map[int]Behind {
	if len(zxids) == 0 {
		return nil
	}
	top := slices.Max(slices.Collect(maps.Values(zxids)))
	out := map[int]Behind{}
	for id, z := range zxids {
		n := 0
		for _, r := range recs {
			if r.Outcome == workload.OK && uint64(r.Zxid) > z && uint64(r.Zxid) <= top {
				n++
			}
		}
		out[id] = Behind{Transactions: n, Bytes: int64(n) * int64(payload)}
	}
	return out
}

// Summarize computes a run's summary.
func Summarize(in Input) (*Summary, error) {
	if len(in.Records) == 0 {
		return nil, errors.New("analysis: summarize: no records")
	}
	if in.Settle <= 0 {
		in.Settle = DefaultSettle
	}
	e := in.Events
	end := e.End
	if end == 0 {
		end = lastIntended(in.Records)
	}
	windows, err := e.Windows(in.Settle, end)
	if err != nil {
		return nil, err
	}
	s := &Summary{InitialLeader: e.InitialLeader, NewLeader: e.NewLeader, ModelNote: in.ModelNote, ElectionZxids: e.ElectionZxids,
		LatencyMS: map[string]map[string]LatencyStats{}, LostAcknowledgedWrites: in.LostAcknowledgedWrites, RTT: in.RTT}
	if e.Crash > 0 && e.Elected > 0 {
		s.ElectionMS = ptr(ms(e.Elected - e.Crash))
	}
	s.BehindAtCrash = behind(e.ElectionZxids, in.Records, in.PayloadBytes)
	for _, id := range in.Outdated {
		if b, ok := s.BehindAtCrash[id]; ok && b.Transactions == 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("p%d was meant to be outdated but was not behind at the crash", id))
		}
	}
	for _, f := range e.FailedFaults {
		s.Warnings = append(s.Warnings, "the nemesis could not carry out the "+f)
	}
	for _, l := range e.InitLimits {
		s.Warnings = append(s.Warnings, "a recovery ran out of patience "+l)
	}
	s.placement(e)
	if e.Leadings > 1 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("p%d went LEADING %d times between the crash and its first commit: recovery counts from the last", e.NewLeader, e.Leadings))
	}
	if e.Leading > 0 && e.FirstCommit > 0 {
		if e.FirstCommit < e.Leading {
			return nil, fmt.Errorf("analysis: first commit at %v before LEADING at %v", e.FirstCommit, e.Leading)
		}
		s.RecoveryMS = ptr(ms(e.FirstCommit - e.Leading))
	}
	for _, w := range windows {
		span := &Span{From: w.From.Seconds(), To: w.To.Seconds()}
		switch w.Name {
		case "before":
			s.Windows.Before = span
		case "placed":
			s.Windows.Placed = span
		default:
			s.Windows.After = span
		}
		lat := Latencies(in.Records, w)
		for dc, model := range in.Model[w.Name] {
			st, ok := lat[dc]
			if !ok {
				// The window under Raft's winner before a placement move can be
				// too short for a DC's requests; any other is a bug.
				if w.Name == "after" && e.Placed.Moved > 0 {
					s.Warnings = append(s.Warnings, fmt.Sprintf("no request from %s in the after window (%v to %v, until the placement move): the model's %.1f ms has nothing beside it", dc, w.From, w.To, model))
					continue
				}
				return nil, fmt.Errorf("analysis: model prediction for DC %q in window %s, which has no requests there", dc, w.Name)
			}
			st.ModelMS = ptr(model)
			lat[dc] = st
		}
		s.LatencyMS[w.Name] = lat
		if in.Host != nil {
			if s.Host == nil {
				s.Host = map[string]*HostWindow{}
			}
			s.Host[w.Name] = HostVerdict(in.Host, w, in.Records, in.Paths, in.PathModel)
		}
	}
	for name := range in.Model {
		_, ok := s.LatencyMS[name]
		switch {
		case !ok && name == "after" && e.Placed.Moved > 0:
			s.Warnings = append(s.Warnings, fmt.Sprintf("no \"after\" window: the placement controller moved Raft's winner p%d before it served", e.NewLeader))
		case !ok:
			// A run too short to settle after the election has no "after" window.
			s.Warnings = append(s.Warnings, fmt.Sprintf("no %q window measured (the run ends before it settles): the model's prediction for it has nothing to sit beside", name))
		}
	}
	st := workload.ComputeStats(in.Records, end, in.OfferedRate)
	s.Requests = Requests{OK: st.OK, Failed: st.Failed, Unknown: st.Unknown}
	// The send lag says whether the pacer kept its schedule, so it counts the steady
	// windows only: during a failover requests wait for a server to take them, which
	// is latency (measured from the intended time), not a pacer falling behind.
	lag := workload.SendLag(in.Records, func(r *workload.Record) bool {
		return slices.ContainsFunc(windows, func(w Window) bool { return w.contains(r.Intended) })
	})
	s.SendLagMS = LagMS{P50: ms(lag.P50), P99: ms(lag.P99), Max: ms(lag.Max)}
	if in.Paths != nil {
		acked := map[string]map[string]int{}
		for w, byDC := range s.LatencyMS {
			acked[w] = map[string]int{}
			for dc, st := range byDC {
				acked[w][dc] = st.Count
			}
		}
		var stalls []HostStall // nil: the host not measured
		if in.Host != nil {
			stalls = append([]HostStall{}, in.Host.Stalls...)
		}
		s.Anatomy, s.AnatomyJoin = Anatomize(in.Paths, windows, in.PathModel, acked, stalls), in.Join
	}
	s.OfferedRate, s.ScheduledRate, s.AchievedRate = st.OfferedRate, st.ScheduledRate, st.AchievedRate
	return s, nil
}

func ptr(v float64) *float64 { return &v }

// placement reports what the placement controller did: whom it placed, the
// transfer and the crash to the placed leader serving, and its stops.
func (s *Summary) placement(e Events) {
	p := e.Placed
	s.Warnings = append(s.Warnings, p.Stops...)
	if p.Leader == 0 {
		return
	}
	s.PlacedLeader = p.Leader
	if p.Moved > 0 && p.Commit > 0 {
		s.TransferMS = ptr(ms(p.Commit - p.Moved))
	}
	if p.Commit > 0 && e.Crash > 0 {
		s.PlacedServingMS = ptr(ms(p.Commit - e.Crash))
	}
}

// WriteFile writes the summary as indented JSON.
func (s *Summary) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("analysis: summary: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	return nil
}

// ReadSummary reads a summary.json.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("analysis: %s: %w", path, err)
	}
	return &s, nil
}

// Repetitions aggregates the summaries of repeated runs of one configuration.
type Repetitions struct {
	N          int  `json:"n"`
	ElectionMS *Agg `json:"election_ms,omitempty"`
	RecoveryMS *Agg `json:"recovery_ms,omitempty"`
	// MeanLatencyMS aggregates each run's mean latency per window and DC.
	MeanLatencyMS          map[string]map[string]Agg `json:"mean_latency_ms"`
	P99LatencyMS           map[string]map[string]Agg `json:"p99_latency_ms"`
	LostAcknowledgedWrites int                       `json:"lost_acknowledged_writes"` // summed
	NewLeaders             map[int]int               `json:"new_leaders"`              // leader id -> runs
	// Host counts the runs whose every window the host's verdict trusted.
	Host HostRuns `json:"host"`
	// ByLeader splits the runs by their new leader when they had more than one: an
	// election that picks among equals by timing (Raft's randomized timeouts,
	// ZooKeeper's votes across a WAN) makes the runs a mixture of winners, and their
	// mean a mixture of latencies.
	ByLeader map[int]*LeaderRuns `json:"by_leader,omitempty"`
	// ByPlacedLeader splits the placed window likewise, by the leader the placement
	// controller placed (Raft's winner is not who led it), when the runs that have
	// that window placed more than one.
	ByPlacedLeader map[int]*LeaderRuns `json:"by_placed_leader,omitempty"`
}

// LeaderRuns are the runs one server won: the after window's mean latency per DC
// over them, beside the model's prediction for that leader.
type LeaderRuns struct {
	Runs          int                `json:"runs"`
	MeanLatencyMS map[string]Agg     `json:"mean_latency_ms"`
	ModelMS       map[string]float64 `json:"model_ms,omitempty"`
}

// Aggregate combines the summaries of repetitions. A DC or window aggregates over the
// runs that measured it (N says how many).
func AggregateRuns(sums []*Summary) (*Repetitions, error) {
	if len(sums) == 0 {
		return nil, errors.New("analysis: no summaries to aggregate")
	}
	r := &Repetitions{N: len(sums), MeanLatencyMS: map[string]map[string]Agg{},
		P99LatencyMS: map[string]map[string]Agg{}, NewLeaders: map[int]int{}}
	var election, recovery []float64
	means := map[string]map[string][]float64{}
	p99s := map[string]map[string][]float64{}
	for _, s := range sums {
		if s.ElectionMS != nil {
			election = append(election, *s.ElectionMS)
		}
		if s.RecoveryMS != nil {
			recovery = append(recovery, *s.RecoveryMS)
		}
		r.LostAcknowledgedWrites += s.LostAcknowledgedWrites
		r.Host.Add(s.Trusted())
		if s.NewLeader != 0 {
			r.NewLeaders[s.NewLeader]++
		}
		for w, byDC := range s.LatencyMS {
			if means[w] == nil {
				means[w], p99s[w] = map[string][]float64{}, map[string][]float64{}
			}
			for dc, st := range byDC {
				if st.Count > 0 {
					means[w][dc] = append(means[w][dc], st.Mean)
					p99s[w][dc] = append(p99s[w][dc], st.P99)
				}
			}
		}
	}
	var err error
	agg := func(xs []float64) *Agg {
		if len(xs) == 0 || err != nil {
			return nil
		}
		a, e := Aggregate(xs)
		err = e
		return &a
	}
	r.ElectionMS, r.RecoveryMS = agg(election), agg(recovery)
	for _, w := range slices.Sorted(maps.Keys(means)) {
		r.MeanLatencyMS[w], r.P99LatencyMS[w] = map[string]Agg{}, map[string]Agg{}
		for dc, xs := range means[w] {
			if a := agg(xs); a != nil {
				r.MeanLatencyMS[w][dc] = *a
			}
			if a := agg(p99s[w][dc]); a != nil {
				r.P99LatencyMS[w][dc] = *a
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if r.ByLeader, err = byLeader(sums, "after", func(s *Summary) int { return s.NewLeader }); err != nil {
		return nil, err
	}
	if r.ByPlacedLeader, err = byLeader(sums, "placed", func(s *Summary) int { return s.PlacedLeader }); err != nil {
		return nil, err
	}
	return r, nil
}

// byLeader aggregates window per the leader that led it (leader of a run; 0: none),
// over the runs that measured the window; nil when they had one leader.
func byLeader(sums []*Summary, window string, leader func(*Summary) int) (map[int]*LeaderRuns, error) {
	means := map[int]map[string][]float64{}
	out := map[int]*LeaderRuns{}
	for _, s := range sums {
		id := leader(s)
		if _, ok := s.LatencyMS[window]; !ok || id == 0 {
			continue
		}
		l := out[id]
		if l == nil {
			l = &LeaderRuns{MeanLatencyMS: map[string]Agg{}}
			out[id], means[id] = l, map[string][]float64{}
		}
		l.Runs++
		for dc, st := range s.LatencyMS[window] {
			if st.Count == 0 {
				continue
			}
			means[id][dc] = append(means[id][dc], st.Mean)
			if st.ModelMS != nil {
				if l.ModelMS == nil {
					l.ModelMS = map[string]float64{}
				}
				l.ModelMS[dc] = *st.ModelMS
			}
		}
	}
	if len(out) < 2 {
		return nil, nil
	}
	for id, byDC := range means {
		for dc, xs := range byDC {
			a, err := Aggregate(xs)
			if err != nil {
				return nil, err
			}
			out[id].MeanLatencyMS[dc] = a
		}
	}
	return out, nil
}
