package model

import (
	"fmt"
	"time"

	"github.com/polebench/polebench/netem"
)

// PlanOneWay is the one-way delays of a plan's links (their mean, without jitter) as
// the model takes them, in ms; a server with itself is 0.
func PlanOneWay(p netem.Plan) OneWay {
	d := map[[2]int]float64{}
	for _, l := range p.Links {
		d[[2]int{l.From, l.To}] = float64(l.Delay) / float64(time.Millisecond)
	}
	return func(from, to int) float64 { return d[[2]int{from, to}] }
}

// NotesFor says where a plan's links make the model's prediction not apply, one
// sentence each; none for the paper's links (delay and jitter only, constant).
//
// The model counts message delays only. A rate adds serialization and, for large
// transfers, the bandwidth limit (recovery by snapshot takes size/rate more); loss
// adds retransmissions (whole RTOs on a TCP stream); duplicates and reordering cost
// TCP duplicate ACKs and retransmissions; a schedule changes the delays the model took
// at the start.
func NotesFor(p netem.Plan) []string {
	var rate, loss, dup, sched bool
	var minRate uint64
	for _, l := range p.Links {
		if l.RateBytesPerSec > 0 {
			rate = true
			if minRate == 0 || l.RateBytesPerSec < minRate {
				minRate = l.RateBytesPerSec
			}
		}
		loss = loss || l.LossPct > 0 || !l.LossGE.IsZero()
		dup = dup || l.DuplicatePct > 0 || l.ReorderPct > 0
	}
	sched = len(p.Schedules) > 0
	var out []string
	if rate {
		out = append(out, fmt.Sprintf("links have a rate (the slowest %.4g Mbit/s): the model ignores serialization, so it holds for small writes well below the rate, not for transfers such as recovery by snapshot, which take at least size/rate longer", float64(minRate)*8/1e6))
	}
	if loss {
		out = append(out, "links lose packets: each loss costs a TCP retransmission (at least 200 ms on a stream, docs/links.md), so measured means and tails lie above the model, which counts no losses")
	}
	if dup {
		out = append(out, "links duplicate or reorder packets: TCP's duplicate ACKs and retransmissions are not in the model")
	}
	if sched {
		out = append(out, "links change during the run (a schedule): the model predicts for the links at the start; each phase of the schedule has its own prediction (model for the plan at that time)")
	}
	return out
}
