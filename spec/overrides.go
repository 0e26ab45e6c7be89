package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/workload/arrival"
)

// Override is one `name=value` change a command line (or, later, a sweep) may make to
// a spec. The CLI registers one flag per override: --p 0.5, --oracle latency.
type Override struct {
	Name  string // flag name
	Usage string
	Field string // the spec field it sets, named in errors
	set   func(s *Spec, v string) error
}

// Setting is one override to apply.
type Setting struct{ Name, Value string }

func (st Setting) String() string { return st.Name + "=" + st.Value }

// ParseSetting parses "name=value".
func ParseSetting(s string) (Setting, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return Setting{}, fmt.Errorf("override %q: want name=value", s)
	}
	return Setting{Name: name, Value: value}, nil
}

var overrides = []Override{
	{"p", "skew: the hot data center gets p of the load, the others share the rest (rates.skew.p)", "rates.skew.p",
		func(s *Spec, v string) error {
			p, err := parseFloat(v)
			if err != nil {
				return err
			}
			s.useSkew()
			s.Rates.Skew.P = &p
			return nil
		}},
	{"hot", "the data center that gets p of the load (rates.skew.hot)", "rates.skew.hot",
		func(s *Spec, v string) error {
			s.useSkew()
			s.Rates.Skew.Hot = v
			return nil
		}},
	{"rate", "total request rate lambda_T in req/s (rates.total)", "rates.total",
		func(s *Spec, v string) error {
			f, err := parseFloat(v)
			s.Rates.Total = f
			return err
		}},
	{"oracle", "oracle: " + strings.Join(score.OracleNames(), ", ") + " (preference and combined use the spec's lists)", "oracle.name",
		func(s *Spec, v string) error {
			o := s.Oracle
			o.Name = v
			if v != score.Preference {
				o.Preference = nil
			}
			if v != score.Combined {
				o.Combined = nil
			}
			s.Oracle = o
			return nil
		}},
	{"initial-leader", "id of the initial leader (initial_leader)", "initial_leader",
		func(s *Spec, v string) error {
			id, err := parseServer(v)
			s.InitialLeader = id
			return err
		}},
	{"crash-at", "when the initial leader is killed, e.g. 60s, or none (crash_at)", "crash_at",
		func(s *Spec, v string) error {
			t, err := parseCrashAt(v)
			s.CrashAt = t
			return err
		}},
	{"duration", "length of the run, e.g. 120s (duration)", "duration",
		func(s *Spec, v string) error { return parseDuration(v, &s.Duration) }},
	{"intra-dc-rtt", "RTT in ms between servers of one data center (intra_dc_rtt_ms)", "intra_dc_rtt_ms",
		func(s *Spec, v string) error {
			f, err := parseFloat(v)
			s.IntraDCRTTMs = f
			return err
		}},
	{"outdate", "outdated servers, replacing the spec's: SERVER:KILL_AT:RESTART_AT[,...] like 1:10s:58s, or none (outdate)", "outdate",
		func(s *Spec, v string) error {
			o, err := parseOutdate(v)
			s.Outdate = o
			return err
		}},
	{"rtt", "the RTT between two data centers, DC1-DC2=MS like D1-D2=77.06; repeatable (rtt)", "rtt",
		func(s *Spec, v string) error {
			pair, ms, ok := strings.Cut(v, "=")
			a, b, ok2 := strings.Cut(pair, "-")
			if !ok || !ok2 || a == "" || b == "" {
				return fmt.Errorf("%q: want DC1-DC2=MS, like D1-D2=20.75", v)
			}
			f, err := parseFloat(ms)
			if err != nil {
				return err
			}
			for i, r := range s.RTT {
				if (r.Between[0] == a && r.Between[1] == b) || (r.Between[0] == b && r.Between[1] == a) {
					s.RTT[i].Ms, s.RTT[i].SDMs = f, 0
					return nil
				}
			}
			s.RTT = append(s.RTT, RTT{Between: [2]string{a, b}, Ms: f})
			return nil
		}},
	{"preload-mb", "MB of application state preloaded on every server (preload_mb)", "preload_mb",
		func(s *Spec, v string) error { return parseInt(v, &s.PreloadMB) }},
	{"init-limit", "how long a server may take to recover, e.g. 60s; 0: sized from the state and the links (init_limit)", "init_limit",
		func(s *Spec, v string) error { return parseDuration(v, &s.InitLimit) }},
	{"payload", "bytes per write (workload.payload_bytes)", "workload.payload_bytes",
		func(s *Spec, v string) error { return parseInt(v, &s.Workload.PayloadBytes) }},
	{"arrival", "arrival of requests: " + arrivalNames() + " (workload.arrival)", "workload.arrival",
		func(s *Spec, v string) error { s.Workload.Arrival = arrival.Kind(v); return nil }},
	{"warmup", "time before the load is measured, e.g. 5s (workload.warmup)", "workload.warmup",
		func(s *Spec, v string) error { return parseDuration(v, &s.Workload.Warmup) }},
	{"settle", "time from the new leader's election to the \"after\" window, e.g. 10s (workload.settle)", "workload.settle",
		func(s *Spec, v string) error { return parseDuration(v, &s.Workload.Settle) }},
	{"jitter", "link jitter in % of the one-way delay (links.jitter_pct)", "links.jitter_pct",
		func(s *Spec, v string) error {
			f, err := parseFloat(v)
			s.Links.JitterPct = f
			return err
		}},
	{"dist", "jitter distribution: " + strings.Join(netem.Dists, ", ") + " (links.distribution)", "links.distribution",
		func(s *Spec, v string) error { s.Links.Dist = v; return nil }},
	{"window-kb", "user-space TCP window in kB (links.window_kb)", "links.window_kb",
		func(s *Spec, v string) error {
			var kb int
			if err := parseInt(v, &kb); err != nil {
				return err
			}
			b, err := windowBytes(kb)
			s.Links.WindowBytes = b
			return err
		}},
	{"backend", "", "backend", // Usage: backendUsage, once the backends registered
		func(s *Spec, v string) error { s.Backend = v; return nil }},
	{"flavor", "", "flavor", // Usage: made in Overrides, once the flavors registered
		func(s *Spec, v string) error { s.Flavor = v; return nil }},
	{"placement", "placement policy: " + strings.Join(placement.Names(), ", ") + "; priority:ID,ID,... gives its order (placement)", "placement",
		func(s *Spec, v string) error {
			p, err := parsePlacement(v)
			s.Placement = p
			return err
		}},
	{"repetitions", "runs per point (repetitions)", "repetitions",
		func(s *Spec, v string) error { return parseInt(v, &s.Repetitions) }},
	{"seed", "random seed of the run (seed)", "seed",
		func(s *Spec, v string) error {
			u, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return fmt.Errorf("%q is not a non-negative integer", v)
			}
			s.Seed = u
			return nil
		}},
}

// Overrides lists every override, in a stable order.
func Overrides() []Override {
	out := slices.Clone(overrides)
	for i := range out {
		switch out[i].Name {
		case "backend":
			out[i].Usage = backendUsage()
		case "flavor":
			out[i].Usage = "the replicas: " + strings.Join(backend.Flavors(), ", ") + " (flavor)"
		}
	}
	return out
}

// backendUsage names the backends registered by now (package backend): made when asked,
// not when this package is initialised, which may be before the backends' packages
// (the flavors' usage likewise).
func backendUsage() string {
	return "where replicas run: " + strings.Join(backend.Names(), ", ") + " (backend)"
}

func (s *Spec) useSkew() {
	s.Rates.Shares = nil
	if s.Rates.Skew == nil {
		s.Rates.Skew = &Skew{}
	}
}

func parseFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	return f, nil
}

func parseInt(v string, dst *int) error {
	i, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not an integer", v)
	}
	*dst = i
	return nil
}

func parseDuration(v string, dst *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration (like 60s or 1m30s)", v)
	}
	*dst = d
	return nil
}

// With returns a copy of s with the settings applied in order and checked together
// (so --crash-at 150s --duration 200s works in either order); s is unchanged.
// Errors name the override and the field it sets.
func (s *Spec) With(settings ...Setting) (*Spec, error) {
	c := s.Clone()
	for _, st := range settings {
		i := slices.IndexFunc(overrides, func(o Override) bool { return o.Name == st.Name })
		if i < 0 {
			names := make([]string, len(overrides))
			for k, o := range overrides {
				names[k] = o.Name
			}
			return nil, fmt.Errorf("unknown override %q (known: %s)", st.Name, strings.Join(names, ", "))
		}
		o := overrides[i]
		pos := "override " + st.String()
		if err := o.set(c, st.Value); err != nil {
			return nil, &Error{Pos: pos, Field: o.Field, Msg: err.Error()}
		}
		// Errors about this field, or about a section the override created (rates.skew
		// where the file gave shares), point at the override; so do errors inside a list
		// it replaced (outdate), whose old lines no longer hold.
		for p := range c.pos {
			if strings.HasPrefix(p, o.Field+".") || strings.HasPrefix(p, o.Field+"[") {
				delete(c.pos, p)
			}
		}
		c.pos[o.Field] = pos
		for p := o.Field; strings.Contains(p, "."); {
			p = p[:strings.LastIndex(p, ".")]
			if _, ok := c.pos[p]; !ok {
				c.pos[p] = pos
			}
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Clone is a deep copy of s.
func (s *Spec) Clone() *Spec {
	c := *s
	c.DataCenters = make([]DataCenter, len(s.DataCenters))
	for i, dc := range s.DataCenters {
		dc.Servers = slices.Clone(dc.Servers)
		c.DataCenters[i] = dc
	}
	c.RTT = slices.Clone(s.RTT)
	c.Rates.Shares = maps.Clone(s.Rates.Shares)
	if s.Rates.Skew != nil {
		sk := *s.Rates.Skew
		if sk.P != nil {
			p := *sk.P
			sk.P = &p
		}
		c.Rates.Skew = &sk
	}
	c.Oracle.Preference = slices.Clone(s.Oracle.Preference)
	c.Oracle.Combined = slices.Clone(s.Oracle.Combined)
	c.Zxids = maps.Clone(s.Zxids)
	c.Faults = slices.Clone(s.Faults)
	c.Outdate = slices.Clone(s.Outdate)
	c.Links = s.Links.clone()
	if s.Placement != nil {
		p := *s.Placement
		p.Priority = slices.Clone(p.Priority)
		c.Placement = &p
	}
	c.pos = maps.Clone(s.pos)
	if c.pos == nil {
		c.pos = map[string]string{}
	}
	return &c
}
