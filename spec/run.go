package spec

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/workload/arrival"
)

// Names the run sections accept, and their defaults (what the paper did, where it says).
const (
	// NoCrash is crash_at's value for a run in which the initial leader never crashes.
	NoCrash = "none"

	DefaultPayloadBytes      = 1024 // 1 kB setData writes (Sec. 4.1)
	DefaultArrival           = arrival.Poisson
	DefaultSessionsPerServer = 4
	DefaultKeys              = 1000
	DefaultWarmup            = 5 * time.Second
	DefaultSettle            = 10 * time.Second // the paper: steady from 10 s after the election
	DefaultRepetitions       = 5                // the paper's runs per point
	DefaultSeed              = 1
	DefaultBackend           = backend.Default
	DefaultFlavor            = backend.DefaultFlavor

	// maxWindowKB is TCP's largest window: 65535 << 14 (RFC 7323), about 1 GiB.
	maxWindowKB = 1 << 20
)

// Workload is the open-loop write load.
type Workload struct {
	PayloadBytes      int           // bytes per setData
	Arrival           arrival.Kind  // arrival.Poisson or arrival.Constant
	SessionsPerServer int           // client sessions pinned to each server
	Keys              int           // znodes the writes are spread over
	Warmup            time.Duration // load runs but is not measured as "before the crash" until then
	Settle            time.Duration // from the election to the "after" window's start
}

// arrivalNames lists the arrival kinds for errors and help: "poisson, constant".
func arrivalNames() string {
	var names []string
	for _, k := range arrival.Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// Fault is one entry of faults: at a time from the start of the run, a kill or a
// restart of a server, a partition into groups or in a shape, the isolation of a
// server (of the leader at that instant, of a data center), a one-way cut, the heal of
// every cut so far, a pause or resume of a server, a kill that loses the server's
// unsynced writes (and tears its log's tail), or a slow disk. Exactly one is set.
type Fault struct {
	At        time.Duration
	Kill      int     // server id, or 0
	Restart   int     // server id, or 0
	Partition [][]int // groups of servers that cannot reach each other
	Isolate   int     // server id cut from every other server, or 0
	Heal      bool

	// Shape is a partition by shape (nemesis.Shapes: halves, one, majority, ring,
	// bridge), drawn from the entry's index, so a spec always cuts the same links.
	Shape         string    `json:",omitempty"`
	IsolateLeader bool      `json:",omitempty"` // isolate: leader
	IsolateDC     string    `json:",omitempty"` // a data center cut from the rest
	OneWay        [][]int   `json:",omitempty"` // [from, to]: what from sends to to is dropped
	Pause         int       `json:",omitempty"`
	Resume        int       `json:",omitempty"`
	LoseUnsynced  int       `json:",omitempty"`
	TornTail      int       `json:",omitempty"`
	SlowDisk      *SlowDisk `json:",omitempty"`
	// KillController and RestartController stop the placement controller (SIGKILL)
	// and start it again (kill: controller, restart: controller): the harness's own
	// faults, not the nemesis's (ControllerFaults).
	KillController    bool `json:",omitempty"`
	RestartController bool `json:",omitempty"`
}

// SlowDisk makes Server's log writes take Delay longer (0: back to normal).
type SlowDisk struct {
	Server int
	Delay  time.Duration
}

func (f Fault) String() string {
	switch {
	case f.KillController:
		return fmt.Sprintf("kill the placement controller at %v", f.At)
	case f.RestartController:
		return fmt.Sprintf("restart the placement controller at %v", f.At)
	case f.Kill != 0:
		return fmt.Sprintf("kill %s at %v", topology.Name(f.Kill), f.At)
	case f.Restart != 0:
		return fmt.Sprintf("restart %s at %v", topology.Name(f.Restart), f.At)
	case f.Partition != nil:
		return fmt.Sprintf("partition %v at %v", f.Partition, f.At)
	case f.Isolate != 0:
		return fmt.Sprintf("isolate %s at %v", topology.Name(f.Isolate), f.At)
	case f.Shape != "":
		return fmt.Sprintf("partition %s at %v", f.Shape, f.At)
	case f.IsolateLeader:
		return fmt.Sprintf("isolate the leader at %v", f.At)
	case f.IsolateDC != "":
		return fmt.Sprintf("isolate %s at %v", f.IsolateDC, f.At)
	case f.OneWay != nil:
		return fmt.Sprintf("one-way %v at %v", f.OneWay, f.At)
	case f.Pause != 0:
		return fmt.Sprintf("pause %s at %v", topology.Name(f.Pause), f.At)
	case f.Resume != 0:
		return fmt.Sprintf("resume %s at %v", topology.Name(f.Resume), f.At)
	case f.LoseUnsynced != 0:
		return fmt.Sprintf("lose-unsynced %s at %v", topology.Name(f.LoseUnsynced), f.At)
	case f.TornTail != 0:
		return fmt.Sprintf("torn-tail %s at %v", topology.Name(f.TornTail), f.At)
	case f.SlowDisk != nil:
		return fmt.Sprintf("slow-disk %s +%v at %v", topology.Name(f.SlowDisk.Server), f.SlowDisk.Delay, f.At)
	}
	return fmt.Sprintf("heal at %v", f.At)
}

// Outdate makes a server miss writes: killed at KillAt, restarted at RestartAt (the paper
// restarts it just before the crash, so it is live for the election but behind).
type Outdate struct {
	Server    int
	KillAt    time.Duration
	RestartAt time.Duration
}

// Links is how every inter-server link is emulated (the delays come from the topology,
// unless a rule sets them).
type Links struct {
	JitterPct   float64 // % of the one-way delay
	Dist        string  // pareto, normal, paretonormal or uniform
	WindowBytes int     // user-space TCP window: bandwidth <= window / RTT (YAML: window_kb)

	// Rules (links.go): a default for every inter-DC link, and rules per pair of data
	// centers (both directions) or per ordered pair. Omitted from the resolved spec's
	// JSON when unset, so runs without them write what they always wrote.
	Default *LinkRule  `json:",omitempty"`
	Pairs   []LinkRule `json:",omitempty"`
}

func (s *Spec) setRunDefaults() {
	s.Workload = Workload{
		PayloadBytes:      DefaultPayloadBytes,
		Arrival:           DefaultArrival,
		SessionsPerServer: DefaultSessionsPerServer,
		Keys:              DefaultKeys,
		Warmup:            DefaultWarmup,
		Settle:            DefaultSettle,
	}
	s.Repetitions = DefaultRepetitions
	s.Seed = DefaultSeed
	s.Backend = DefaultBackend
	s.Flavor = DefaultFlavor
	s.Links = Links{JitterPct: netem.DefaultJitterPct, Dist: netem.DefaultDist, WindowBytes: netem.DefaultWindowBytes}
}

// parseCrashAt reads crash_at: a positive duration, or none.
func parseCrashAt(v string) (time.Duration, error) {
	if v == NoCrash {
		return 0, nil
	}
	t, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is neither a duration (like 60s) nor %s", v, NoCrash)
	case t == 0:
		return 0, fmt.Errorf("0s would crash the initial leader as the run starts: write %s for a run without the crash", NoCrash)
	}
	return t, nil
}

// windowBytes converts window_kb, which must be a TCP window size.
func windowBytes(kb int) (int, error) {
	if kb < 1 || kb > maxWindowKB {
		return 0, fmt.Errorf("%d kB is outside 1 .. %d kB (TCP's largest window, 1 GiB)", kb, maxWindowKB)
	}
	return kb << 10, nil
}

func decodeCrashAt(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		if err != nil {
			return err
		}
		if s.CrashAt, err = parseCrashAt(v); err != nil {
			return d.errf(n, path, "%v", err)
		}
		return nil
	}
}

// decodeWorkload and decodeLinks start from the defaults: a key left out keeps its default.
func decodeWorkload(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		w := &s.Workload
		return d.mapping(n, path, map[string]field{
			"payload_bytes":       d.integer(&w.PayloadBytes),
			"arrival":             d.str((*string)(&w.Arrival)),
			"sessions_per_server": d.integer(&w.SessionsPerServer),
			"keys":                d.integer(&w.Keys),
			"warmup":              d.duration(&w.Warmup),
			"settle":              d.duration(&w.Settle),
		})
	}
}

func decodeLinks(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		l := &s.Links
		return d.mapping(n, path, map[string]field{
			"jitter_pct":   d.float(&l.JitterPct),
			"distribution": d.str(&l.Dist),
			"window_kb": func(n *yaml.Node, path string) error {
				var kb int
				if err := d.integer(&kb)(n, path); err != nil {
					return err
				}
				b, err := windowBytes(kb)
				if err != nil {
					return d.errf(n, path, "%v", err)
				}
				l.WindowBytes = b
				return nil
			},
			"default": func(n *yaml.Node, path string) error {
				l.Default = &LinkRule{}
				return decodeLinkRule(d, s, l.Default, false)(n, path)
			},
			"pairs": decodeLinkPairs(d, s),
		})
	}
}

func decodeOutdate(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		s.Outdate = nil
		return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
			var o Outdate
			err := d.mapping(e, p, map[string]field{
				"server":     d.integer(&o.Server),
				"kill_at":    d.duration(&o.KillAt),
				"restart_at": d.duration(&o.RestartAt),
			}, "server", "kill_at", "restart_at")
			s.Outdate = append(s.Outdate, o)
			return err
		})
	}
}

func decodeFaults(d *decoder, s *Spec) field {
	// Server 0 means "not set" in a Fault, so an explicit 0 is refused here.
	server := func(dst *int) field {
		return func(n *yaml.Node, path string) error {
			if err := d.integer(dst)(n, path); err != nil {
				return err
			}
			if *dst < 1 {
				return d.errf(n, path, "%d is not a server id (ids are 1..N)", *dst)
			}
			return nil
		}
	}
	groups := func(dst *[][]int) field {
		return func(n *yaml.Node, path string) error {
			*dst = [][]int{}
			return d.list(n, path, func(_ int, g *yaml.Node, p string) error {
				var ids []int
				err := d.ints(&ids)(g, p)
				*dst = append(*dst, ids)
				return err
			})
		}
	}
	var f Fault
	// partition: groups, or a shape's name; isolate: a server id, or leader.
	partition := func(n *yaml.Node, path string) error {
		if resolve(n).Kind == yaml.ScalarNode {
			return d.str(&f.Shape)(n, path)
		}
		return groups(&f.Partition)(n, path)
	}
	isolate := func(n *yaml.Node, path string) error {
		if v, err := d.scalar(n, path); err == nil && v == "leader" {
			f.IsolateLeader = true
			return nil
		}
		return server(&f.Isolate)(n, path)
	}
	// kill and restart: a server id, or controller (the placement controller).
	orController := func(dst *int, ctl *bool) field {
		return func(n *yaml.Node, path string) error {
			if v, err := d.scalar(n, path); err == nil && v == "controller" {
				*ctl = true
				return nil
			}
			return server(dst)(n, path)
		}
	}
	slow := func(n *yaml.Node, path string) error {
		f.SlowDisk = &SlowDisk{}
		return d.mapping(n, path, map[string]field{
			"server": server(&f.SlowDisk.Server),
			"delay":  d.duration(&f.SlowDisk.Delay),
		}, "server", "delay")
	}
	return func(n *yaml.Node, path string) error {
		s.Faults = nil
		return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
			f = Fault{}
			err := d.mapping(e, p, map[string]field{
				"at":            d.duration(&f.At),
				"kill":          orController(&f.Kill, &f.KillController),
				"restart":       orController(&f.Restart, &f.RestartController),
				"isolate":       isolate,
				"heal":          d.boolean(&f.Heal),
				"partition":     partition,
				"isolate_dc":    d.str(&f.IsolateDC),
				"one_way":       groups(&f.OneWay),
				"pause":         server(&f.Pause),
				"resume":        server(&f.Resume),
				"lose_unsynced": server(&f.LoseUnsynced),
				"torn_tail":     server(&f.TornTail),
				"slow_disk":     slow,
			}, "at")
			s.Faults = append(s.Faults, f)
			return err
		})
	}
}

// parseOutdate reads the --outdate override: SERVER:KILL_AT:RESTART_AT[,...], or none.
func parseOutdate(v string) ([]Outdate, error) {
	if v == "none" || v == "" {
		return nil, nil
	}
	var out []Outdate
	for _, item := range strings.Split(v, ",") {
		parts := strings.Split(item, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%q is not SERVER:KILL_AT:RESTART_AT (like 1:10s:58s)", item)
		}
		id, err := parseServer(parts[0])
		if err != nil {
			return nil, err
		}
		o := Outdate{Server: id}
		if err := parseDuration(parts[1], &o.KillAt); err != nil {
			return nil, err
		}
		if err := parseDuration(parts[2], &o.RestartAt); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func parseServer(v string) (int, error) {
	id, err := strconv.Atoi(strings.TrimPrefix(v, "p"))
	if err != nil {
		return 0, fmt.Errorf("%q is not a server id", v)
	}
	return id, nil
}

// schedule lists every kill and restart in time order, each with the spec field that
// asked for it (nemesis.Fault.Source). At equal times restarts come first (an outdated
// server restarted at crash_at is live for the election), then the order of the spec:
// the crash, outdate, faults.
func (s *Spec) schedule() []nemesis.Fault {
	var ev []nemesis.Fault
	if s.CrashAt > 0 {
		ev = append(ev, nemesis.Fault{At: s.CrashAt, Kind: nemesis.Crash, Server: s.InitialLeader, Source: "crash_at"})
	}
	others := func(id int) [][2]int {
		var out [][2]int
		for x := 1; x <= s.N(); x++ {
			if x != id {
				out = append(out, [2]int{min(id, x), max(id, x)})
			}
		}
		return out
	}
	for i, o := range s.Outdate {
		p := index("outdate", i)
		// Cut from the broadcast before it restarts, so no leader of that time can
		// bring it up to date; it takes part in elections all along, and rejoins the
		// broadcast at the crash.
		ev = append(ev, nemesis.Fault{At: o.KillAt, Kind: nemesis.Kill, Server: o.Server, Source: p + ".kill_at"},
			nemesis.Fault{At: o.RestartAt, Kind: nemesis.Outdate, Server: o.Server, Pairs: others(o.Server), BroadcastOnly: true, Source: p + ".restart_at"},
			nemesis.Fault{At: o.RestartAt, Kind: nemesis.Restart, Server: o.Server, Source: p + ".restart_at"})
		if s.CrashAt > 0 {
			at := max(s.CrashAt, o.RestartAt)
			ev = append(ev, nemesis.Fault{At: at, Kind: nemesis.Rejoin, Server: o.Server, Pairs: others(o.Server), BroadcastOnly: true, Source: "crash_at"})
		}
	}
	ids := make([]int, s.N())
	for i := range ids {
		ids[i] = i + 1
	}
	for i, f := range s.Faults {
		p := index("faults", i)
		var nf nemesis.Fault
		switch {
		case f.KillController || f.RestartController:
			continue // the harness's, not the nemesis's: ControllerFaults
		case f.Kill != 0:
			nf = nemesis.Fault{Kind: nemesis.Kill, Server: f.Kill, Source: p + ".kill"}
		case f.Restart != 0:
			nf = nemesis.Fault{Kind: nemesis.Restart, Server: f.Restart, Source: p + ".restart"}
		case f.Partition != nil:
			nf = nemesis.Fault{Kind: nemesis.Partition, Pairs: nemesis.Pairs(f.Partition), Source: p + ".partition"}
		case f.Isolate != 0:
			nf = nemesis.Fault{Kind: nemesis.Isolate, Server: f.Isolate, Pairs: others(f.Isolate), Source: p + ".isolate"}
		case f.Shape != "":
			pairs, _ := nemesis.ShapePairs(f.Shape, ids, rand.New(rand.NewPCG(uint64(i), 0x5a4e))) // checked
			nf = nemesis.Fault{Kind: nemesis.Partition, Pairs: pairs, Shape: f.Shape, Source: p + ".partition"}
		case f.IsolateLeader:
			nf = nemesis.Fault{Kind: nemesis.IsolateLeader, Source: p + ".isolate"}
		case f.IsolateDC != "":
			var in, out []int
			for _, dc := range s.DataCenters {
				if dc.Name == f.IsolateDC {
					in = append(in, dc.Servers...)
				} else {
					out = append(out, dc.Servers...)
				}
			}
			nf = nemesis.Fault{Kind: nemesis.Partition, Pairs: nemesis.Pairs([][]int{in, out}), Shape: nemesis.ShapeDC + ":" + f.IsolateDC, Source: p + ".isolate_dc"}
		case f.OneWay != nil:
			var pairs [][2]int
			if len(f.OneWay) == 2 {
				for _, a := range f.OneWay[0] {
					for _, b := range f.OneWay[1] {
						pairs = append(pairs, [2]int{a, b})
					}
				}
			}
			nf = nemesis.Fault{Kind: nemesis.OneWay, Pairs: pairs, Source: p + ".one_way"}
		case f.Pause != 0:
			nf = nemesis.Fault{Kind: nemesis.Pause, Server: f.Pause, Source: p + ".pause"}
		case f.Resume != 0:
			nf = nemesis.Fault{Kind: nemesis.Resume, Server: f.Resume, Source: p + ".resume"}
		case f.LoseUnsynced != 0:
			nf = nemesis.Fault{Kind: nemesis.LoseUnsynced, Server: f.LoseUnsynced, Source: p + ".lose_unsynced"}
		case f.TornTail != 0:
			nf = nemesis.Fault{Kind: nemesis.TornTail, Server: f.TornTail, Source: p + ".torn_tail"}
		case f.SlowDisk != nil:
			nf = nemesis.Fault{Kind: nemesis.SlowDisk, Server: f.SlowDisk.Server, Delay: f.SlowDisk.Delay, Source: p + ".slow_disk"}
		default:
			nf = nemesis.Fault{Kind: nemesis.Heal, Source: p + ".heal"}
		}
		nf.At = f.At
		ev = append(ev, nf)
	}
	// At one instant: cuts, then restarts, then kills, then what restores links.
	rank := func(f nemesis.Fault) int {
		switch {
		case f.Cuts():
			return 0
		case f.Kind == nemesis.Restart:
			return 1
		case f.Stops():
			return 2
		}
		return 3
	}
	slices.SortStableFunc(ev, func(a, b nemesis.Fault) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(rank(a), rank(b)))
	})
	return ev
}

// ControllerFault is a kill or a restart of the placement controller, at At from the
// start of the load; Source is the spec field that asked for it.
type ControllerFault struct {
	At     time.Duration
	Kill   bool // else a restart
	Source string
}

// ControllerFaults are the spec's kills and restarts of the placement controller, in
// time order (the spec's order at one instant).
func (s *Spec) ControllerFaults() []ControllerFault {
	var out []ControllerFault
	for i, f := range s.Faults {
		if f.KillController || f.RestartController {
			field := ".restart"
			if f.KillController {
				field = ".kill"
			}
			out = append(out, ControllerFault{At: f.At, Kill: f.KillController, Source: index("faults", i) + field})
		}
	}
	slices.SortStableFunc(out, func(a, b ControllerFault) int { return cmp.Compare(a.At, b.At) })
	return out
}

// FaultSchedule is the run's nemesis schedule in time order: the crash of the initial
// leader at CrashAt (unless crash_at is none), each Outdate as a kill and a restart,
// and Faults. At equal times restarts come first, then the crash, outdate and faults in
// the spec's order.
func (s *Spec) FaultSchedule() []nemesis.Fault { return s.schedule() }

// Warnings lists what is allowed but probably not meant, located like errors: an
// outdated server restarted after the crash (so it is not behind at the election), and
// faults that leave fewer live servers than a quorum.
func (s *Spec) Warnings() []string {
	var out []string
	warn := func(path, format string, args ...any) {
		out = append(out, s.errf(path, format, args...).Error())
	}
	if s.CrashAt > 0 {
		for i, o := range s.Outdate {
			if o.RestartAt > s.CrashAt {
				warn(index("outdate", i)+".restart_at", "%s restarts at %v, after the crash at %v: it is not outdated at the election (the paper restarts it just before)",
					topology.Name(o.Server), o.RestartAt, s.CrashAt)
			}
		}
	}
	n, q := s.N(), score.Quorum(s.N())
	live := n
	for _, e := range s.schedule() {
		if e.Kind != nemesis.Restart && !e.Stops() {
			continue
		}
		if e.Stops() {
			live--
			if live == q-1 {
				warn(e.Source, "at %v only %d of %d servers are live, fewer than a quorum (%d): writes stall until a restart",
					e.At, live, n, q)
			}
		} else {
			live++
		}
	}
	return out
}

// Plan is the spec's link plan for a topology (Spec.Topology) under a seed, which makes
// the jitter repeatable.
//
// The links section's rules (default, pairs, schedules) are resolved onto the
// topology's links; without rules the plan is the topology's, as it always was.
func (s *Spec) Plan(topo *topology.Topology, seed uint64) netem.Plan {
	p := netem.NewPlan(topo, netem.Options{JitterPct: s.Links.JitterPct, Dist: s.Links.Dist, WindowBytes: s.Links.WindowBytes, Seed: int64(seed)})
	if s.Links.hasRules() {
		s.applyRules(&p)
	}
	return p
}
