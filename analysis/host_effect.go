package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/workload"
)

// The verdict on a window judges what the host did to the numbers the run reports:
// how far its stalls moved each DC's mean, p99 and p999 and the send lag's p99, how
// much a server without a meter of its own (ZooKeeper's JVMs) waited for a CPU per
// request, and how far the user-space links' late deliveries moved each DC's mean. A
// figure moved is an amount in ms against a limit in ms: a stall moves a percentile by
// its length at most, and a mean by what it took from the writes it held over all of
// them, so one short stall tips no window, short or long, as the share of requests it
// overlapped did. The limits are docs/host.md's, with the runs they come from.

// HostLimit is how far the host may move a statistic: the larger of MS and Pct % of
// the statistic as measured.
type HostLimit struct{ MS, Pct float64 }

// Of is the limit for a statistic of of ms.
func (l HostLimit) Of(of float64) float64 { return max(l.MS, l.Pct/100*of) }

func (l HostLimit) String() string {
	if l.Pct == 0 {
		return fmt.Sprintf("%g ms", l.MS)
	}
	return fmt.Sprintf("the larger of %g ms and %g %%", l.MS, l.Pct)
}

// The limits (docs/host.md: "Where the limits come from").
var (
	// MeanLimit: a mean moved further is the host's as much as the system's: untrusted.
	MeanLimit = HostLimit{MS: 0.5, Pct: 5}
	// TailLimit: a p99 moved further is degraded.
	TailLimit = HostLimit{MS: 5, Pct: 25}
	// P999Limit: a p999 moved further is degraded. Its floor is a quiet host's
	// longest stalls, about 10 ms: a p999 is a few writes, and one such stall holds
	// a dozen.
	P999Limit = HostLimit{MS: 10, Pct: 25}
	// SendLagLimit: the send lag's p99 moved further is degraded.
	SendLagLimit = HostLimit{MS: 1.5}
)

// The statistics an effect is on.
const (
	StatMean    = "mean"
	StatP99     = "p99"
	StatP999    = "p999"
	StatSendLag = "send_lag_p99"
)

// HostEffect is how far the host moved one statistic of a window.
type HostEffect struct {
	Stat string `json:"stat"`
	DC   string `json:"dc,omitempty"` // All for every DC; empty for the send lag
	// Process is the server judged by its run-queue wait (one without a meter);
	// empty for the meters' stalls.
	Process string  `json:"process,omitempty"`
	MS      float64 `json:"moved_ms"` // how far the host moved it
	OfMS    float64 `json:"of_ms"`    // the statistic as measured
	LimitMS float64 `json:"limit_ms"`
}

// Over says whether the effect is past its limit.
func (e HostEffect) Over() bool { return e.MS > e.LimitMS }

// judged is the verdict past the effect's limit, and the limit: a mean moved is
// untrusted, a tail or the send lag degraded.
func (e HostEffect) judged() (string, HostLimit) {
	switch e.Stat {
	case StatMean:
		return Untrusted, MeanLimit
	case StatSendLag:
		return Degraded, SendLagLimit
	case StatP999:
		return Degraded, P999Limit
	}
	return Degraded, TailLimit
}

func (e HostEffect) String() string {
	what := fmt.Sprintf("%s's %s", e.DC, e.Stat)
	if e.Stat == StatSendLag {
		what = "the send lag's p99"
	}
	switch e.Process {
	case "":
	case LinksProcess:
		return fmt.Sprintf("the user-space links' late deliveries moved %s by about %.2f ms of %.2f", what, e.MS, e.OfMS)
	default:
		return fmt.Sprintf("%s waited %.2f ms for a CPU per write, up to that much of %s of %.2f ms", e.Process, e.MS, what, e.OfMS)
	}
	return fmt.Sprintf("the host's stalls moved %s by %.2f ms of %.2f", what, e.MS, e.OfMS)
}

// HostVerdict judges window w of a run: the figures of what its host did
// (hostFigures) and the effects on the window's statistics (hostEffects), from the
// traced paths where there are some (each write's own processes' stalls, as the
// anatomy takes them out of its phases), else from the records.
func HostVerdict(h *HostInput, w Window, recs []workload.Record, paths []Path, pm model.PathModel) *HostWindow {
	hw := hostFigures(h, w, recs)
	hw.Effects = hostEffects(h, w, recs, paths, pm)
	hw.Verdict = Trusted
	for _, over := range overLimits(hw.Effects) {
		e := over[0]
		v, limit := e.judged()
		also := ""
		if len(over) > 1 {
			var dcs []string
			for _, o := range over[1:] {
				dcs = append(dcs, o.DC)
			}
			also = "; " + strings.Join(dcs, ", ") + " too"
		}
		hw.Reasons = append(hw.Reasons, fmt.Sprintf("%s (%s above %.2f ms: %s%s)", e, v, e.LimitMS, limit, also))
		if v == Untrusted || hw.Verdict == Trusted {
			hw.Verdict = v
		}
	}
	if hw.Verdict != Trusted {
		hw.Reasons = append(hw.Reasons, hw.contention()...)
	}
	return hw
}

// overLimits groups the effects past their limits by statistic (and process), each
// group's furthest past its limit first; the means first, then the tails, the send
// lag, and the processes' waits.
func overLimits(effects []HostEffect) [][]HostEffect {
	rank := map[string]int{StatMean: 0, StatP99: 1, StatP999: 2, StatSendLag: 3}
	groups := map[[2]string][]HostEffect{}
	for _, e := range effects {
		if e.Over() {
			k := [2]string{e.Process, e.Stat}
			groups[k] = append(groups[k], e)
		}
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b [2]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), rank[a[1]]-rank[b[1]])
	})
	out := make([][]HostEffect, len(keys))
	for i, k := range keys {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b HostEffect) int { return cmp.Compare(b.MS/b.LimitMS, a.MS/a.LimitMS) })
		out[i] = g
	}
	return out
}

// delayed is a write's latency and the part of it that was the host's, ms.
type delayed struct{ lat, host float64 }

// hostEffects is how far the host moved each of w's statistics.
func hostEffects(h *HostInput, w Window, recs []workload.Record, paths []Path, pm model.PathModel) []HostEffect {
	byDC := pathDelays(h, w, paths, pm)
	if len(byDC) == 0 {
		byDC = recordDelays(h, w, recs)
	}
	var out []HostEffect
	for _, dc := range slices.Sorted(maps.Keys(byDC)) {
		out = append(out, moved(byDC[dc], dc)...)
	}
	if e, ok := sendLagEffect(h, w, recs); ok {
		out = append(out, e)
	}
	out = append(out, linkEffects(h, w, byDC, crossings(w, paths))...)
	return append(out, waitEffects(h, w, byDC[All])...)
}

// LinksProcess names the user-space links among the effects' processes: the local
// backend's delay lines, run in the harness, whose late deliveries are the host's.
const LinksProcess = "links"

// maxCrossings is the most links a write crosses on its way: to the leader, the
// proposal out and its ack back, and the commit back to the server it was sent to.
const maxCrossings = 4

// crossings is, per DC (All included), the mean number of links w's traced writes
// crossed on their way: two for the proposal and its ack, two more where the write
// was sent to a follower; a DC without traces is not in it.
func crossings(w Window, paths []Path) map[string]float64 {
	n, c := map[string]float64{}, map[string]float64{}
	for i := range paths {
		p := &paths[i]
		if !w.contains(p.At[StepIntended]) {
			continue
		}
		k := 2.0
		if p.Server != p.Leader {
			k = maxCrossings
		}
		for _, dc := range [2]string{p.DC, All} {
			n[dc]++
			c[dc] += k
		}
	}
	for dc := range c {
		c[dc] /= n[dc]
	}
	return c
}

// linkEffects judges the user-space links: their deliveries' mean lateness over the
// window times the links a DC's writes cross on their way (maxCrossings where no trace
// says), an estimate of how far the links moved the DC's mean. The lateness is mostly
// the harness's stalls seen from the links, so it is judged beside the stalls'
// effect, not added to it. None where the links delivered nothing (every backend but
// local) or the run kept no mean.
func linkEffects(h *HostInput, w Window, byDC map[string][]delayed, cross map[string]float64) []HostEffect {
	late := linkLateMean(h, w)
	if late == nil {
		return nil
	}
	var out []HostEffect
	for _, dc := range slices.Sorted(maps.Keys(byDC)) {
		ds := byDC[dc]
		if len(ds) == 0 {
			continue
		}
		of, k := meanLatency(ds), cross[dc]
		if k == 0 {
			k = maxCrossings
		}
		out = append(out, HostEffect{Stat: StatMean, DC: dc, Process: LinksProcess, MS: k * *late, OfMS: of, LimitMS: MeanLimit.Of(of)})
	}
	return out
}

// meanLatency is the mean latency of ds, which has at least one write.
func meanLatency(ds []delayed) float64 {
	var sum float64
	for _, d := range ds {
		sum += d.lat
	}
	return sum / float64(len(ds))
}

// pathDelays are w's traced writes per DC (All included), each with its stalls as
// the anatomy counts them.
func pathDelays(h *HostInput, w Window, paths []Path, pm model.PathModel) map[string][]delayed {
	an := &anatomist{paths: paths, pm: pm, host: newPathStalls(h.Stalls)}
	wa := &windowAnatomy{anatomist: an, w: w, splits: map[[2]int]split{}}
	out := map[string][]delayed{}
	for i := range paths {
		p := &paths[i]
		if !w.contains(p.At[StepIntended]) {
			continue
		}
		m, ok := wa.split(p)
		an.pp.of(p, an.host, m, ok)
		d := delayed{an.pp.latency, an.pp.stall}
		out[p.DC], out[All] = append(out[p.DC], d), append(out[All], d)
	}
	return sortDelays(out)
}

// recordDelays are w's acknowledged writes per DC (All included), each with the time
// in which the harness or the server it was sent to stalled: without a trace the
// leader and the follower are unknown, and a link's time is not told from a process's.
func recordDelays(h *HostInput, w Window, recs []workload.Record) map[string][]delayed {
	host := newPathStalls(h.Stalls)
	out := map[string][]delayed{}
	for _, r := range recs {
		if r.Outcome != workload.OK || !w.contains(r.Intended) {
			continue
		}
		d := delayed{ms(r.Latency()), ms(overlap(host.on(r.Server), r.Intended, r.Done))}
		out[r.DC], out[All] = append(out[r.DC], d), append(out[All], d)
	}
	return sortDelays(out)
}

// sortDelays orders each DC's delays, so that their sums do not depend on the order
// the records came in (a run's live records and its stored ones differ in it, and
// the summary analyze writes again must be the run's, to the last digit).
func sortDelays(byDC map[string][]delayed) map[string][]delayed {
	for _, ds := range byDC {
		slices.SortFunc(ds, func(a, b delayed) int { return cmp.Or(cmp.Compare(a.lat, b.lat), cmp.Compare(a.host, b.host)) })
	}
	return byDC
}

// moved is how far the host moved a DC's mean and, with enough writes for them to be
// more than a handful (the anatomy's tails), its p99 and p999: each percentile as
// measured against the same percentile of the latencies less the host's part.
func moved(ds []delayed, dc string) []HostEffect {
	if len(ds) == 0 {
		return nil
	}
	lat, less := make([]float64, len(ds)), make([]float64, len(ds))
	var sum, host float64
	for i, d := range ds {
		lat[i], less[i] = d.lat, d.lat-d.host
		sum, host = sum+d.lat, host+d.host
	}
	n := float64(len(ds))
	out := []HostEffect{{Stat: StatMean, DC: dc, MS: host / n, OfMS: sum / n, LimitMS: MeanLimit.Of(sum / n)}}
	slices.Sort(lat)
	slices.Sort(less)
	for i, t := range tails {
		if len(ds) < t.min {
			break
		}
		of := Quantile(lat, t.q)
		e := HostEffect{Stat: []string{StatP99, StatP999}[i], DC: dc, MS: max(0, of-Quantile(less, t.q)), OfMS: of}
		_, limit := e.judged()
		e.LimitMS = limit.Of(of)
		out = append(out, e)
	}
	return out
}

// sendLagEffect is how far the harness's stalls moved the send lag's p99 in w: the
// pacer runs in the harness, so its stalls are the host's part of the lag.
func sendLagEffect(h *HostInput, w Window, recs []workload.Record) (HostEffect, bool) {
	host := newPathStalls(h.Stalls).on()
	var lag, less []float64
	for _, r := range recs {
		if !r.WasSent() || !w.contains(r.Intended) {
			continue
		}
		l := ms(r.Sent - r.Intended)
		lag, less = append(lag, l), append(less, l-ms(overlap(host, r.Intended, r.Sent)))
	}
	if len(lag) == 0 {
		return HostEffect{}, false
	}
	slices.Sort(lag)
	slices.Sort(less)
	of := Quantile(lag, 0.99)
	return HostEffect{Stat: StatSendLag, MS: max(0, of-Quantile(less, 0.99)), OfMS: of, LimitMS: SendLagLimit.Of(of)}, true
}

// waitEffects judges the servers watched from outside that have no meter (ZooKeeper's
// JVMs): their threads' run-queue wait over the window per acknowledged write, an
// estimate of how far the process moved the mean (every wait on a write's way, none
// overlapping another's), against all DCs' mean.
func waitEffects(h *HostInput, w Window, all []delayed) []HostEffect {
	if len(all) == 0 {
		return nil
	}
	waited := map[string]time.Duration{}
	for _, s := range windowSamples(h, w) {
		for p, v := range s.ProcWaitPct {
			if p != HarnessProcess && !slices.Contains(h.Processes, p) {
				waited[p] += time.Duration(v / 100 * s.PeriodMS * float64(time.Millisecond))
			}
		}
	}
	n, of := float64(len(all)), meanLatency(all)
	var out []HostEffect
	for _, p := range slices.Sorted(maps.Keys(waited)) {
		out = append(out, HostEffect{Stat: StatMean, DC: All, Process: p, MS: ms(waited[p]) / n, OfMS: of, LimitMS: MeanLimit.Of(of)})
	}
	return out
}

// Moved says, for each statistic, the effect nearest its limit, and the waiting server
// nearest it: what the verdict rests on, for a line beside it ("mean 0.31 ms (D2 of
// 1.40), p99 1.20 ms (D2 of 4.70), ...").
func (hw *HostWindow) Moved() string {
	var parts []string
	for _, stat := range []string{StatMean, StatP99, StatP999, StatSendLag, ""} {
		var top *HostEffect
		for i, e := range hw.Effects {
			if (stat == "" && e.Process != "" || stat != "" && e.Process == "" && e.Stat == stat) && (top == nil || e.MS/e.LimitMS > top.MS/top.LimitMS) {
				top = &hw.Effects[i]
			}
		}
		switch {
		case top == nil:
		case stat == StatSendLag:
			parts = append(parts, fmt.Sprintf("send lag p99 %.2f ms of %.2f", top.MS, top.OfMS))
		case stat == "" && top.Process == LinksProcess:
			parts = append(parts, fmt.Sprintf("links' lateness %.2f ms (%s of %.2f)", top.MS, top.DC, top.OfMS))
		case stat == "":
			parts = append(parts, fmt.Sprintf("%s's run-queue wait %.2f ms per write (of %s's mean %.2f)", top.Process, top.MS, top.DC, top.OfMS))
		default:
			parts = append(parts, fmt.Sprintf("%s %.2f ms (%s of %.2f)", stat, top.MS, top.DC, top.OfMS))
		}
	}
	return strings.Join(parts, ", ")
}
