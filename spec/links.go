package spec

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/experiments"
	"github.com/polebench/polebench/netem"
)

// Shape is a set of link settings, each optional (nil: inherited from the default, the
// links section or the topology). Percentages are 0..100.
type Shape struct {
	RTTMs            *float64       `json:",omitempty"` // both directions: delay RTT/2 each way
	DelayMs          *float64       `json:",omitempty"` // one way
	JitterPct        *float64       `json:",omitempty"` // of the one-way delay
	DelayCorrPct     *float64       `json:",omitempty"`
	LossPct          *float64       `json:",omitempty"`
	LossCorrPct      *float64       `json:",omitempty"`
	LossGE           *netem.GEModel `json:",omitempty"`
	DuplicatePct     *float64       `json:",omitempty"`
	DuplicateCorrPct *float64       `json:",omitempty"`
	ReorderPct       *float64       `json:",omitempty"`
	ReorderCorrPct   *float64       `json:",omitempty"`
	ReorderGap       *uint32        `json:",omitempty"`
	RateBitsPerSec   *uint64        `json:",omitempty"`
	QueuePackets     *uint32        `json:",omitempty"`
	QueueBytes       *uint64        `json:",omitempty"`
}

// LinkRule is links.default or one entry of links.pairs: a Shape for the links
// between two data centers (Between, both directions) or from one to another (From,
// To), and how they change over time: Schedule, piecewise constant, each step's
// shape applied on top of the previous state, or Trace, a CSV file of (time_s, rtt_ms)
// rows replayed as steps (resolved into Schedule when the spec is read).
type LinkRule struct {
	Between  []string `json:",omitempty"`
	From, To string   `json:",omitempty"`
	Shape
	Schedule []LinkStep `json:",omitempty"`
	Trace    string     `json:",omitempty"`
}

// LinkStep is one step of a schedule: from At (since the start of the run) on.
type LinkStep struct {
	At time.Duration
	Shape
}

// decodeShape returns the fields of a Shape, for a mapping that may have more.
func decodeShape(d *decoder, sh *Shape) map[string]field {
	fl := func(dst **float64, check func(float64) error) field {
		return func(n *yaml.Node, path string) error {
			var v float64
			if err := d.float(&v)(n, path); err != nil {
				return err
			}
			if err := check(v); err != nil {
				return d.errf(n, path, "%v", err)
			}
			*dst = &v
			return nil
		}
	}
	return map[string]field{
		"rtt_ms":     fl(&sh.RTTMs, nonNegative),
		"delay_ms":   fl(&sh.DelayMs, nonNegative),
		"jitter_pct": fl(&sh.JitterPct, percent),
		"delay_corr": fl(&sh.DelayCorrPct, percent),
		"loss": func(n *yaml.Node, path string) error {
			if resolve(n).Kind == yaml.ScalarNode {
				return pctField(d, &sh.LossPct)(n, path)
			}
			var ge netem.GEModel
			var gePath string
			err := d.mapping(n, path, map[string]field{
				"pct":  pctField(d, &sh.LossPct),
				"corr": pctField(d, &sh.LossCorrPct),
				"gemodel": func(n *yaml.Node, path string) error {
					gePath = path
					return d.mapping(n, path, map[string]field{
						"p":   pctInto(d, &ge.P),
						"r":   pctInto(d, &ge.R),
						"1-h": pctInto(d, &ge.OneMinusH),
						"1-k": pctInto(d, &ge.OneMinusK),
					}, "p", "r", "1-h", "1-k")
				},
			})
			if err != nil {
				return err
			}
			if gePath != "" {
				if sh.LossPct != nil || sh.LossCorrPct != nil {
					return d.errf(n, path, "pct and gemodel: a link has one loss model")
				}
				sh.LossGE = &ge
			}
			if sh.LossCorrPct != nil && sh.LossPct == nil {
				return d.errf(n, path, "corr without pct")
			}
			return nil
		},
		"duplicate": pctCorr(d, &sh.DuplicatePct, &sh.DuplicateCorrPct, nil),
		"reorder":   pctCorr(d, &sh.ReorderPct, &sh.ReorderCorrPct, &sh.ReorderGap),
		"rate": func(n *yaml.Node, path string) error {
			v, err := d.scalar(n, path)
			if err != nil {
				return err
			}
			r, err := ParseRate(v)
			if err != nil {
				return d.errf(n, path, "%v", err)
			}
			sh.RateBitsPerSec = &r
			return nil
		},
		"queue": func(n *yaml.Node, path string) error {
			var pk, by string
			err := d.mapping(n, path, map[string]field{"packets": d.str(&pk), "bytes": d.str(&by)})
			if err != nil {
				return err
			}
			switch {
			case (pk == "") == (by == ""):
				return d.errf(n, path, "give one of packets or bytes")
			case pk != "":
				v, err := strconv.ParseUint(pk, 10, 32)
				if err != nil || v == 0 {
					return d.errf(n, path+".packets", "%q is not a positive number of packets", pk)
				}
				u := uint32(v)
				sh.QueuePackets = &u
			default:
				v, err := ParseSize(by)
				if err != nil {
					return d.errf(n, path+".bytes", "%v", err)
				}
				sh.QueueBytes = &v
			}
			return nil
		},
	}
}

func nonNegative(v float64) error {
	if v < 0 {
		return fmt.Errorf("%v ms is negative", v)
	}
	return nil
}

func percent(v float64) error {
	if !(v >= 0 && v <= 100) {
		return fmt.Errorf("%v%% is outside [0, 100]", v)
	}
	return nil
}

// parsePct reads a percentage, with or without a trailing %.
func parsePct(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "%")), 64)
	if err != nil || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a percentage (like 0.5 or 0.5%%)", v)
	}
	return f, percent(f)
}

func pctInto(d *decoder, dst *float64) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		if err != nil {
			return err
		}
		f, err := parsePct(v)
		if err != nil {
			return d.errf(n, path, "%v", err)
		}
		*dst = f
		return nil
	}
}

func pctField(d *decoder, dst **float64) field {
	return func(n *yaml.Node, path string) error {
		var f float64
		if err := pctInto(d, &f)(n, path); err != nil {
			return err
		}
		*dst = &f
		return nil
	}
}

// pctCorr decodes "N" or {pct: N, corr: C[, gap: G]}.
func pctCorr(d *decoder, p, corr **float64, gap **uint32) field {
	return func(n *yaml.Node, path string) error {
		if resolve(n).Kind == yaml.ScalarNode {
			return pctField(d, p)(n, path)
		}
		fields := map[string]field{"pct": pctField(d, p), "corr": pctField(d, corr)}
		if gap != nil {
			fields["gap"] = func(n *yaml.Node, path string) error {
				var g uint64
				if err := d.uint64(&g)(n, path); err != nil {
					return err
				}
				if g == 0 || g > math.MaxUint32 {
					return d.errf(n, path, "gap %d: want 1 or more packets", g)
				}
				u := uint32(g)
				*gap = &u
				return nil
			}
		}
		return d.mapping(n, path, fields, "pct")
	}
}

// ParseRate reads a rate in bits per second, with tc's units: bit, kbit, mbit, gbit,
// tbit (powers of 1000), kibit, mibit, gibit, tibit (powers of 1024), or bytes per
// second bps, kbps, mbps, gbps, tbps; a bare number is bits per second. Zero is
// refused (no limit is no rate field).
func ParseRate(v string) (uint64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != 'e' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], s[i:]
	}
	f, err := strconv.ParseFloat(num, 64)
	mult, ok := map[string]float64{
		"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
		"kibit": 1 << 10, "mibit": 1 << 20, "gibit": 1 << 30, "tibit": 1 << 40,
		"bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
	}[unit]
	if err != nil || !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a rate (like 100mbit, 1gbit or 12500000bps)", v)
	}
	bits := f * mult
	switch {
	case bits < 8:
		return 0, fmt.Errorf("rate %q is below one byte per second (leave rate out for no limit)", v)
	case bits > 8*float64(math.MaxUint64/2):
		return 0, fmt.Errorf("rate %q is too large", v)
	}
	return uint64(math.Round(bits)), nil
}

// ParseSize reads a size in bytes: a number with b, k/kb/kib, m/mb/mib, g/gb/gib
// (powers of 1024, as tc's sizes), or none.
func ParseSize(v string) (uint64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], s[i:]
	}
	n, err := strconv.ParseUint(num, 10, 64)
	mult, ok := map[string]uint64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}[unit]
	if err != nil || !ok || n == 0 {
		return 0, fmt.Errorf("%q is not a positive size (like 1500, 64kb or 1mb)", v)
	}
	return n * mult, nil
}

// decodeLinkRule decodes links.default (pair false) or an entry of links.pairs.
func decodeLinkRule(d *decoder, s *Spec, r *LinkRule, pair bool) field {
	return func(n *yaml.Node, path string) error {
		fields := decodeShape(d, &r.Shape)
		if pair {
			fields["between"] = d.strs(&r.Between)
			fields["from"] = d.str(&r.From)
			fields["to"] = d.str(&r.To)
		}
		fields["schedule"] = func(n *yaml.Node, path string) error {
			r.Schedule = nil
			return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
				var st LinkStep
				sf := decodeShape(d, &st.Shape)
				sf["at"] = d.duration(&st.At)
				err := d.mapping(e, p, sf, "at")
				r.Schedule = append(r.Schedule, st)
				return err
			})
		}
		fields["trace"] = func(n *yaml.Node, path string) error {
			if err := d.str(&r.Trace)(n, path); err != nil {
				return err
			}
			steps, err := readTrace(s.File, r.Trace)
			if err != nil {
				return d.errf(n, path, "%v", err)
			}
			r.Schedule = steps
			return nil
		}
		if err := d.mapping(n, path, fields); err != nil {
			return err
		}
		if r.Trace != "" && len(r.Schedule) > 0 && d.pos[join(path, "schedule")] != "" {
			return d.errf(n, path, "schedule and trace: give one")
		}
		return nil
	}
}

// readTrace reads a CSV trace of (time_s, rtt_ms) rows, an optional header first,
// relative to the spec's directory (or, for a shipped spec, from the shipped files).
func readTrace(specFile, name string) ([]LinkStep, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(specFile), name)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if rel, ok := strings.CutPrefix(filepath.ToSlash(path), "experiments/"); ok {
			data, err = experiments.FS.ReadFile(rel)
		}
		if err != nil {
			return nil, err
		}
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = 2
	r.Comment = '#'
	r.TrimLeadingSpace = true
	var steps []LinkStep
	for row := 0; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		t, err1 := strconv.ParseFloat(rec[0], 64)
		rtt, err2 := strconv.ParseFloat(rec[1], 64)
		if err1 != nil || err2 != nil {
			if row == 0 {
				continue // a header
			}
			return nil, fmt.Errorf("%s:%d: want time_s,rtt_ms numbers, got %q,%q", path, line, rec[0], rec[1])
		}
		switch {
		case t < 0 || math.IsNaN(t) || math.IsInf(t, 0):
			return nil, fmt.Errorf("%s:%d: time %v s is negative", path, line, t)
		case rtt < 0 || math.IsNaN(rtt) || math.IsInf(rtt, 0):
			return nil, fmt.Errorf("%s:%d: RTT %v ms is negative", path, line, rtt)
		}
		at := time.Duration(math.Round(t * float64(time.Second)))
		if len(steps) > 0 && at <= steps[len(steps)-1].At {
			return nil, fmt.Errorf("%s:%d: time %v s is not after the previous row's (%v)", path, line, t, steps[len(steps)-1].At)
		}
		steps = append(steps, LinkStep{At: at, Shape: Shape{RTTMs: &rtt}})
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return steps, nil
}

func decodeLinkPairs(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		s.Links.Pairs = nil
		return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
			var r LinkRule
			err := decodeLinkRule(d, s, &r, true)(e, p)
			s.Links.Pairs = append(s.Links.Pairs, r)
			return err
		})
	}
}

// hasRules reports whether the links section sets anything beyond jitter, distribution
// and window: then Plan resolves the rules.
func (l Links) hasRules() bool { return l.Default != nil || len(l.Pairs) > 0 }

// checkLinks checks the rules of the links section against the data centers and the
// backend.
func (s *Spec) checkLinks() error {
	l := s.Links
	rules := []struct {
		path string
		r    *LinkRule
	}{}
	if l.Default != nil {
		rules = append(rules, struct {
			path string
			r    *LinkRule
		}{"links.default", l.Default})
	}
	for i := range l.Pairs {
		rules = append(rules, struct {
			path string
			r    *LinkRule
		}{index("links.pairs", i), &l.Pairs[i]})
	}
	for _, e := range rules {
		p, r := e.path, e.r
		if p != "links.default" {
			switch {
			case len(r.Between) > 0 && (r.From != "" || r.To != ""):
				return s.errf(p, "between and from/to: give one")
			case len(r.Between) > 0 && len(r.Between) != 2:
				return s.errf(p+".between", "needs exactly two data centers, got %d", len(r.Between))
			case len(r.Between) == 0 && (r.From == "" || r.To == ""):
				return s.errf(p, "needs between: [A, B], or from: A and to: B")
			}
			ends := r.Between
			names := []string{p + ".between", p + ".between"}
			if len(ends) == 0 {
				ends, names = []string{r.From, r.To}, []string{p + ".from", p + ".to"}
			}
			for k, name := range ends {
				if _, ok := s.dcIndex(name); !ok {
					return s.errf(names[k], "unknown data center %q", name)
				}
			}
			if ends[0] == ends[1] {
				return s.errf(names[0], "both ends are %q: link rules are for links between data centers", ends[0])
			}
			if len(r.Between) == 0 && r.RTTMs != nil {
				return s.errf(p+".rtt_ms", "rtt_ms sets both directions: use between, or delay_ms for the one direction from %s to %s", r.From, r.To)
			}
		}
		if r.RTTMs != nil && r.DelayMs != nil {
			return s.errf(p+".rtt_ms", "rtt_ms and delay_ms: give one")
		}
		for i, st := range r.Schedule {
			sp := index(p+".schedule", i)
			if r.Trace != "" {
				sp = p + ".trace"
			}
			if st.At < 0 {
				return s.errf(sp+".at", "%v is negative", st.At)
			}
			if i > 0 && st.At <= r.Schedule[i-1].At {
				return s.errf(sp+".at", "%v is not after the previous step (%v): a schedule is in time order", st.At, r.Schedule[i-1].At)
			}
			if st.RTTMs != nil && st.DelayMs != nil {
				return s.errf(sp+".rtt_ms", "rtt_ms and delay_ms: give one")
			}
			if len(r.Between) == 0 && p != "links.default" && st.RTTMs != nil {
				return s.errf(sp+".rtt_ms", "rtt_ms sets both directions: use between, or delay_ms for one direction")
			}
			if s.Duration > 0 && st.At >= s.Duration {
				return s.errf(sp+".at", "%v is not before the end of the run (%v)", st.At, s.Duration)
			}
		}
		if err := s.checkBackendLinks(p, r); err != nil {
			return err
		}
	}
	// Everything else (reorder without delay, GE with random loss, ...) the plan's own
	// validation finds; report it at the links section.
	t, err := s.Topology()
	if err != nil {
		return nil // reported by validate with its own position
	}
	if err := s.Plan(t, s.Seed).Validate(); err != nil {
		return s.errf("links", "%v", err)
	}
	return nil
}

// checkBackendLinks refuses what the spec's backend and flavor cannot emulate, as
// they declare it (backend.Links): a schedule where links cannot change during a run,
// rate or loss where there are none, and where the links are user space only, what a
// TCP stream hides (a backend with kernel netem that falls back to user space checks
// its plan itself: netem.Plan.UserSpaceSupports).
func (s *Spec) checkBackendLinks(p string, r *LinkRule) error {
	name := cmp.Or(s.Backend, DefaultBackend)
	b, known := backend.Lookup(name)
	if !known {
		return nil // a program that links no backend reads specs for their layout only
	}
	if err := s.checkSchedules(p, r, b); err != nil {
		return err
	}
	shapes := []struct {
		path string
		sh   Shape
	}{{p, r.Shape}}
	for i, st := range r.Schedule {
		shapes = append(shapes, struct {
			path string
			sh   Shape
		}{index(p+".schedule", i), st.Shape})
	}
	links := b.Carries.Links
	if f, ok := backend.LookupFlavor(s.Flavor); ok && f.Carries.Links.Streams && !links.Kernel {
		for _, e := range shapes {
			if sh := e.sh; (sh.LossPct != nil && *sh.LossPct > 0) || sh.LossGE != nil {
				return s.errf(e.path+".loss", "flavor %s's links on the %s backend are user space, carrying TCP streams, which lose nothing (use %s for kernel netem)", f.Name, name, kernelBackends())
			}
		}
	}
	for _, e := range shapes {
		if err := s.checkShape(e.path, e.sh, name, links); err != nil {
			return err
		}
	}
	return nil
}

// checkSchedules refuses a link schedule where the backend or the flavor does not
// change links during a run.
func (s *Spec) checkSchedules(p string, r *LinkRule, b backend.Backend) error {
	if len(r.Schedule) == 0 {
		return nil
	}
	f := p + ".schedule"
	if r.Trace != "" {
		f = p + ".trace"
	}
	if !b.Carries.Links.Schedules {
		var do []string
		for _, n := range backend.Names() {
			if o, _ := backend.Lookup(n); o.Carries.Links.Schedules {
				do = append(do, n)
			}
		}
		return s.errf(f, "the %s backend does not change links during a run yet (%s do)", b.Name, strings.Join(do, ", "))
	}
	if fl, ok := backend.LookupFlavor(s.Flavor); ok && !fl.Carries.Links.Schedules {
		return s.errf(f, "flavor %s does not change links during a run: %s", fl.Name, fl.Carries.Reason("schedules"))
	}
	return nil
}

// checkShape refuses what links without kernel netem, or without rate and loss, lack.
func (s *Spec) checkShape(path string, sh Shape, name string, l backend.Links) error {
	set := func(v *float64) bool { return v != nil && *v > 0 }
	if !l.RateLoss {
		switch {
		case sh.RateBitsPerSec != nil:
			return s.errf(path+".rate", "the %s backend's links have no rate limit", name)
		case set(sh.LossPct) || sh.LossGE != nil:
			return s.errf(path+".loss", "the %s backend's links lose nothing", name)
		}
	}
	if l.Kernel {
		return nil
	}
	switch {
	case set(sh.DuplicatePct):
		return s.errf(path+".duplicate", "the %s backend's links are user space, carrying TCP streams, which hide duplicates (use %s for kernel netem)", name, kernelBackends())
	case set(sh.ReorderPct):
		return s.errf(path+".reorder", "the %s backend's links are user space, carrying TCP streams, which deliver in order (use %s for kernel netem)", name, kernelBackends())
	case set(sh.LossCorrPct):
		return s.errf(path+".loss", "the %s backend's links are user space: loss correlation needs kernel netem (use %s)", name, kernelBackends())
	case set(sh.DelayCorrPct):
		return s.errf(path+".delay_corr", "the %s backend's links are user space: delay correlation needs kernel netem (use %s)", name, kernelBackends())
	}
	return nil
}

// kernelBackends names the backends that declare kernel netem: "a, b or c".
func kernelBackends() string {
	var k []string
	for _, n := range backend.Names() {
		if b, _ := backend.Lookup(n); b.Carries.Links.Kernel {
			k = append(k, n)
		}
	}
	if len(k) < 2 {
		return strings.Join(k, "")
	}
	return strings.Join(k[:len(k)-1], ", ") + " or " + k[len(k)-1]
}

// linkState is a link being resolved: the netem link and the jitter percentage its
// jitter follows when its delay changes.
type linkState struct {
	l         netem.Link
	jitterPct float64
}

func (st *linkState) apply(sh Shape) {
	l := &st.l
	if sh.RTTMs != nil {
		l.Delay = msDuration(*sh.RTTMs / 2)
	}
	if sh.DelayMs != nil {
		l.Delay = msDuration(*sh.DelayMs)
	}
	if sh.JitterPct != nil {
		st.jitterPct = *sh.JitterPct
	}
	l.Jitter = time.Duration(math.Round(float64(l.Delay) * st.jitterPct / 100))
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&l.DelayCorrPct, sh.DelayCorrPct)
	if sh.LossPct != nil || sh.LossCorrPct != nil {
		l.LossGE = netem.GEModel{}
		l.LossCorrPct = 0
	}
	set(&l.LossPct, sh.LossPct)
	set(&l.LossCorrPct, sh.LossCorrPct)
	if sh.LossGE != nil {
		l.LossGE, l.LossPct, l.LossCorrPct = *sh.LossGE, 0, 0
	}
	if sh.DuplicatePct != nil {
		l.DuplicateCorrPct = 0
	}
	set(&l.DuplicatePct, sh.DuplicatePct)
	set(&l.DuplicateCorrPct, sh.DuplicateCorrPct)
	if sh.ReorderPct != nil {
		l.ReorderCorrPct, l.ReorderGap = 0, 0
	}
	set(&l.ReorderPct, sh.ReorderPct)
	set(&l.ReorderCorrPct, sh.ReorderCorrPct)
	if sh.ReorderGap != nil {
		l.ReorderGap = *sh.ReorderGap
	}
	if sh.RateBitsPerSec != nil {
		l.RateBytesPerSec = max(*sh.RateBitsPerSec/8, 1)
	}
	if sh.QueuePackets != nil {
		l.QueuePackets, l.QueueBytes = *sh.QueuePackets, 0
	}
	if sh.QueueBytes != nil {
		l.QueueBytes, l.QueuePackets = *sh.QueueBytes, 0
	}
}

func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// applyRules resolves the links section's rules onto the plan's inter-DC links: the
// default, then the between rules, then the from/to rules, in file order within each
// kind (a later rule overrides an earlier one field by field). A link's schedule is
// that of the last rule with one.
func (s *Spec) applyRules(p *netem.Plan) {
	dcOf := map[int]string{}
	for _, dc := range s.DataCenters {
		for _, id := range dc.Servers {
			dcOf[id] = dc.Name
		}
	}
	var rules []*LinkRule
	if s.Links.Default != nil {
		rules = append(rules, s.Links.Default)
	}
	for i := range s.Links.Pairs {
		if len(s.Links.Pairs[i].Between) > 0 {
			rules = append(rules, &s.Links.Pairs[i])
		}
	}
	for i := range s.Links.Pairs {
		if len(s.Links.Pairs[i].Between) == 0 {
			rules = append(rules, &s.Links.Pairs[i])
		}
	}
	for i, l := range p.Links {
		a, b := dcOf[l.From], dcOf[l.To]
		if a == b {
			continue
		}
		st := linkState{l: l, jitterPct: s.Links.JitterPct}
		var sched *LinkRule
		var matched []*LinkRule
		for _, r := range rules {
			ok := r == s.Links.Default ||
				len(r.Between) == 2 && (r.Between[0] == a && r.Between[1] == b || r.Between[0] == b && r.Between[1] == a) ||
				r.From == a && r.To == b
			if !ok {
				continue
			}
			matched = append(matched, r)
			st.apply(r.Shape)
			if len(r.Schedule) > 0 {
				sched = r
			}
		}
		p.Links[i] = st.l
		if sched == nil {
			continue
		}
		ls := netem.LinkSchedule{From: l.From, To: l.To}
		for _, step := range sched.Schedule {
			st.apply(step.Shape)
			ls.Steps = append(ls.Steps, netem.Step{At: step.At, Link: st.l})
		}
		p.Schedules = append(p.Schedules, ls)
	}
}

// cloneLinks deep-copies the rules (Spec.Clone).
func (l Links) clone() Links {
	c := l
	if l.Default != nil {
		d := *l.Default
		d.Schedule = slices.Clone(d.Schedule)
		c.Default = &d
	}
	c.Pairs = slices.Clone(l.Pairs)
	for i := range c.Pairs {
		c.Pairs[i].Schedule = slices.Clone(c.Pairs[i].Schedule)
		c.Pairs[i].Between = slices.Clone(c.Pairs[i].Between)
	}
	return c
}
