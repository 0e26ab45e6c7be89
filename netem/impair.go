package netem

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// GEModel is the Gilbert-Elliott loss model as tc's "loss gemodel p r 1-h 1-k" takes
// it, every field a percentage: P the chance to go from the good state to the bad one,
// R from bad back to good, OneMinusH the loss in the bad state (100: every packet), and
// OneMinusK the loss in the good state. The zero value is "no GE model".
type GEModel struct {
	P         float64 `json:"p_pct"`
	R         float64 `json:"r_pct"`
	OneMinusH float64 `json:"one_minus_h_pct"`
	OneMinusK float64 `json:"one_minus_k_pct"`
}

// IsZero reports whether g is unset (encoding/json's omitzero uses it).
func (g GEModel) IsZero() bool { return g == GEModel{} }

// MeanLoss is the model's stationary loss rate in percent: the chain spends
// p/(p+r) of the packets in the bad state.
func (g GEModel) MeanLoss() float64 {
	if g.P+g.R == 0 {
		return g.OneMinusK
	}
	bad := g.P / (g.P + g.R)
	return bad*g.OneMinusH + (1-bad)*g.OneMinusK
}

// pct checks one percentage.
func pct(name string, v float64) error {
	if !(v >= 0 && v <= 100) { // also rejects NaN
		return fmt.Errorf("%s %v%% outside [0, 100]", name, v)
	}
	return nil
}

// validateImpairments checks the fields beyond delay, jitter and random loss.
func (l Link) validateImpairments() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"delay correlation", l.DelayCorrPct}, {"loss correlation", l.LossCorrPct},
		{"duplicate", l.DuplicatePct}, {"duplicate correlation", l.DuplicateCorrPct},
		{"reorder", l.ReorderPct}, {"reorder correlation", l.ReorderCorrPct},
		{"gemodel p", l.LossGE.P}, {"gemodel r", l.LossGE.R},
		{"gemodel 1-h", l.LossGE.OneMinusH}, {"gemodel 1-k", l.LossGE.OneMinusK},
	} {
		if err := pct(f.name, f.v); err != nil {
			return err
		}
	}
	switch {
	case !l.LossGE.IsZero() && (l.LossPct != 0 || l.LossCorrPct != 0):
		return fmt.Errorf("random loss and a gemodel on one link (netem takes one loss model)")
	case l.LossCorrPct != 0 && l.LossPct == 0:
		return fmt.Errorf("loss correlation without loss")
	case l.DuplicateCorrPct != 0 && l.DuplicatePct == 0:
		return fmt.Errorf("duplicate correlation without duplicate")
	case l.ReorderCorrPct != 0 && l.ReorderPct == 0:
		return fmt.Errorf("reorder correlation without reorder")
	case l.ReorderGap != 0 && l.ReorderPct == 0:
		return fmt.Errorf("reorder gap without reorder")
	case l.ReorderPct != 0 && l.Delay == 0:
		return fmt.Errorf("reorder needs a delay (netem reorders by sending some packets at once)")
	case l.QueuePackets != 0 && l.QueueBytes != 0:
		return fmt.Errorf("a queue in packets and in bytes: give one")
	case l.QueueBytes != 0 && l.QueueBytes < limitPacket:
		return fmt.Errorf("queue of %d bytes holds no full-size packet (%d bytes)", l.QueueBytes, limitPacket)
	case l.QueuePackets > maxLimit || l.QueueBytes/limitPacket > maxLimit:
		return fmt.Errorf("queue above %d packets", maxLimit)
	}
	return nil
}

// LinkSchedule is how the link From->To changes over time: from each step's At (since
// the start of the run) on, the link is the step's Link, until the next step. Before
// the first step the link is the plan's.
type LinkSchedule struct {
	From  int    `json:"from"`
	To    int    `json:"to"`
	Steps []Step `json:"steps"`
}

// Step is the whole state of a link from At on.
type Step struct {
	At   time.Duration `json:"at_ns"`
	Link Link          `json:"link"`
}

func (p Plan) validateSchedules() error {
	seen := map[[2]int]bool{}
	for i, s := range p.Schedules {
		k := [2]int{s.From, s.To}
		if _, ok := p.Link(s.From, s.To); !ok {
			return fmt.Errorf("schedules[%d]: no link p%d->p%d in the plan", i, s.From, s.To)
		}
		if seen[k] {
			return fmt.Errorf("schedules[%d]: second schedule of p%d->p%d", i, s.From, s.To)
		}
		seen[k] = true
		if len(s.Steps) == 0 {
			return fmt.Errorf("schedules[%d] (p%d->p%d): no steps", i, s.From, s.To)
		}
		for j, st := range s.Steps {
			switch {
			case st.At < 0:
				return fmt.Errorf("schedules[%d].steps[%d]: negative time %v", i, j, st.At)
			case j > 0 && st.At <= s.Steps[j-1].At:
				return fmt.Errorf("schedules[%d].steps[%d]: at %v, not after the previous step (%v)", i, j, st.At, s.Steps[j-1].At)
			case st.Link.From != s.From || st.Link.To != s.To:
				return fmt.Errorf("schedules[%d].steps[%d]: link p%d->p%d in the schedule of p%d->p%d", i, j, st.Link.From, st.Link.To, s.From, s.To)
			}
			if err := st.Link.Validate(); err != nil {
				return fmt.Errorf("schedules[%d].steps[%d] (p%d->p%d): %w", i, j, s.From, s.To, err)
			}
		}
	}
	return nil
}

// Schedule returns the schedule of the link from one server to another, or nil.
func (p Plan) Schedule(from, to int) []Step {
	for _, s := range p.Schedules {
		if s.From == from && s.To == to {
			return s.Steps
		}
	}
	return nil
}

// LinkAt is the link from one server to another at time t since the start of the run.
func (p Plan) LinkAt(from, to int, t time.Duration) (Link, bool) {
	l, ok := p.Link(from, to)
	if !ok {
		return l, false
	}
	return linkAt(l, p.Schedule(from, to), t), true
}

func linkAt(l Link, steps []Step, t time.Duration) Link {
	for _, st := range steps {
		if st.At > t {
			break
		}
		l = st.Link
	}
	return l
}

// At is the plan as it stands at time t since the start of the run: every scheduled
// link replaced by its state then, and no schedules. Apply(At(t)) is what the kernel
// applier installs at t.
func (p Plan) At(t time.Duration) Plan {
	q := p
	q.Schedules = nil
	q.Links = slices.Clone(p.Links)
	for i, l := range q.Links {
		q.Links[i] = linkAt(l, p.Schedule(l.From, l.To), t)
	}
	return q
}

// Instants lists the times at which some link changes, sorted, without repeats.
func (p Plan) Instants() []time.Duration {
	var out []time.Duration
	for _, s := range p.Schedules {
		for _, st := range s.Steps {
			out = append(out, st.At)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Changed lists the links (from, to) whose state changes at instant t.
func (p Plan) Changed(t time.Duration) [][2]int {
	var out [][2]int
	for _, s := range p.Schedules {
		for _, st := range s.Steps {
			if st.At == t {
				out = append(out, [2]int{s.From, s.To})
			}
		}
	}
	slices.SortFunc(out, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return out
}

// Impaired reports whether the link has anything beyond delay and jitter.
func (l Link) Impaired() bool {
	k := l
	k.From, k.To, k.Delay, k.Jitter, k.Dist = 0, 0, 0, 0, ""
	return k != Link{}
}

// UserSpaceSupports says whether a user-space link (a DelayLine: the local and swarm
// backends, docker without kernel netem, the simulator) can emulate l. A user-space
// link carries a TCP stream, which hides duplicates and reordering, and models loss
// as the retransmission delay a lost segment costs the stream (DelayLine); the
// correlations of netem's correlated random generator have no counterpart there.
func (l Link) UserSpaceSupports() error {
	switch {
	case l.DuplicatePct != 0:
		return fmt.Errorf("duplicate: a user-space link carries a TCP stream, which hides duplicated segments (use a kernel-netem backend: netns or docker)")
	case l.ReorderPct != 0:
		return fmt.Errorf("reorder: a user-space link carries a TCP stream, which delivers in order (use a kernel-netem backend: netns or docker)")
	case l.DelayCorrPct != 0 || l.LossCorrPct != 0:
		return fmt.Errorf("delay or loss correlation: only kernel netem has a correlated generator (use a kernel-netem backend: netns or docker)")
	}
	return nil
}

// UserSpaceSupports checks every link and step of p with Link.UserSpaceSupports.
func (p Plan) UserSpaceSupports() error {
	check := func(l Link) error {
		if err := l.UserSpaceSupports(); err != nil {
			return fmt.Errorf("link p%d->p%d: %w", l.From, l.To, err)
		}
		return nil
	}
	for _, l := range p.Links {
		if err := check(l); err != nil {
			return err
		}
	}
	for _, s := range p.Schedules {
		for _, st := range s.Steps {
			if err := check(st.Link); err != nil {
				return fmt.Errorf("at %v: %w", st.At, err)
			}
		}
	}
	return nil
}

// queueLimit is the kernel netem limit of l in packets, or 0 when l sets none.
func (l Link) queueLimit() uint32 {
	switch {
	case l.QueuePackets > 0:
		return l.QueuePackets
	case l.QueueBytes > 0:
		return uint32(max(l.QueueBytes/limitPacket, 1))
	}
	return 0
}

// scaled turns a percentage into netem's fixed point (0..MaxUint32) like tc's
// set_percent: rint(pct/100 * UINT32_MAX).
func scaled(pct float64) uint32 { return uint32(math.RoundToEven(pct / 100 * math.MaxUint32)) }
