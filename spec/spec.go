// Package experiments holds the experiment spec (YAML), its checks and overrides, and
// the shipped specs that reproduce the paper.
package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// Spec is one experiment. Sections decode themselves (see sections), so adding a
// section later leaves existing files valid.
type Spec struct {
	Name, Description string
	DataCenters       []DataCenter
	RTT               []RTT   // explicit inter-DC RTTs; override the endpoints' Table 2 entry
	IntraDCRTTMs      float64 // default topology.DefaultIntraRTT
	Rates             Rates
	Oracle            score.Oracle   // default history
	Zxids             map[int]uint64 // last zxid per server for the model's history oracle; missing = equal
	InitialLeader     int
	CrashAt           time.Duration // when the initial leader is killed; 0: never (crash_at: none)
	Duration          time.Duration // length of the run

	// The run; every field has a default (run.go) and FaultSchedule merges the faults.
	Workload  Workload
	Faults    []Fault   // more kills and restarts
	Outdate   []Outdate // the paper's recovery experiments: kill early, restart just before the crash
	PreloadMB int       // MB of application state preloaded on every server before the run (0)
	// InitLimit is how long a server may take to recover, election to serving
	// (ZooKeeper's initLimit × tickTime); 0: sized from the state and the links
	// (InitLimitFor).
	InitLimit   time.Duration `json:",omitempty"`
	Repetitions int           // runs per point (5)
	Seed        uint64        // (1)
	Backend     string        // one of backend.Names(), backend.Default by default
	Flavor      string        // one of backend.Flavors(): the replicas, backend.DefaultFlavor by default
	// FlavorSettings are the flavor's own settings (flavor.settings: what it
	// declares in backend.Flavor.Settings), resolved with their defaults once checked.
	FlavorSettings map[string]string `json:",omitempty"`
	Links          Links
	// Placement is the placement controller beside the cluster; nil: none.
	Placement *Placement `json:",omitempty"`

	// File is where the spec came from (the name given to Parse).
	File string
	pos  map[string]string // field path -> "file:line" or the override that set it
}

// DataCenter is one entry of datacenters.
type DataCenter struct {
	Name     string
	Endpoint string // a Table 2 endpoint (slac, caltech, tud, cern, fnal), or ""
	// Region is a region of the regions preset (topology.Regions, e.g. westeurope):
	// the DC's RTTs to other DCs with a region come from the preset.
	Region  string `json:",omitempty"`
	Servers []int
	// Nodes, for a backend that spreads servers over machines, are the nodes (host
	// names or IDs) its servers run on, round robin; without them, the nodes labelled
	// polebench.dc=<Name>. The other backends run every server on this machine.
	Nodes []string
}

// RTT is one entry of rtt: the RTT between two data centers.
type RTT struct {
	Between  [2]string
	Ms, SDMs float64
}

// Rates is the request load: a total and how it splits over the data centers, by
// explicit shares or by the paper's skew; with neither, every DC gets an equal share.
type Rates struct {
	Total  float64
	Shares map[string]float64
	Skew   *Skew
}

// Skew is the paper's Fig. 7 load: the hot DC gets P*total, the others split the rest
// equally. P nil means equal shares (p = 1/k for k DCs) until a p is given.
type Skew struct {
	P   *float64
	Hot string
}

// section decodes one top-level key of a spec.
type section struct {
	name     string
	required bool
	decode   func(d *decoder, s *Spec) field
}

// sections lists the top-level keys in their documented order.
var sections = []section{
	{"name", true, func(d *decoder, s *Spec) field { return d.str(&s.Name) }},
	{"description", false, func(d *decoder, s *Spec) field { return d.str(&s.Description) }},
	{"datacenters", true, decodeDataCenters},
	{"rtt", false, decodeRTT},
	{"intra_dc_rtt_ms", false, func(d *decoder, s *Spec) field { return d.float(&s.IntraDCRTTMs) }},
	{"rates", true, decodeRates},
	{"oracle", false, decodeOracle},
	{"zxids", false, decodeZxids},
	{"initial_leader", true, func(d *decoder, s *Spec) field { return d.integer(&s.InitialLeader) }},
	{"crash_at", true, decodeCrashAt},
	{"duration", true, func(d *decoder, s *Spec) field { return d.duration(&s.Duration) }},
	{"workload", false, decodeWorkload},
	{"preload_mb", false, func(d *decoder, s *Spec) field { return d.integer(&s.PreloadMB) }},
	{"init_limit", false, func(d *decoder, s *Spec) field { return d.duration(&s.InitLimit) }},
	{"outdate", false, decodeOutdate},
	{"faults", false, decodeFaults},
	{"links", false, decodeLinks},
	{"placement", false, decodePlacement},
	{"backend", false, func(d *decoder, s *Spec) field { return d.str(&s.Backend) }},
	{"flavor", false, decodeFlavor},
	{"repetitions", false, func(d *decoder, s *Spec) field { return d.integer(&s.Repetitions) }},
	{"seed", false, func(d *decoder, s *Spec) field { return d.uint64(&s.Seed) }},
}

// Load reads and checks the spec at path.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks a spec; name is used in error messages.
func Parse(name string, data []byte) (*Spec, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Pos: name, Msg: "empty spec"}
		}
		return nil, &Error{Pos: name, Msg: err.Error()}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{Pos: name, Msg: "more than one YAML document"}
	}
	s := &Spec{
		File:         name,
		IntraDCRTTMs: topology.DefaultIntraRTT,
		Oracle:       score.Oracle{Name: score.History},
	}
	s.setRunDefaults()
	d := &decoder{file: name, pos: map[string]string{}}
	fields := map[string]field{}
	var required []string
	for _, sec := range sections {
		fields[sec.name] = sec.decode(d, s)
		if sec.required {
			required = append(required, sec.name)
		}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if err := d.mapping(root, "", fields, required...); err != nil {
		return nil, err
	}
	s.pos = d.pos
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func decodeDataCenters(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		s.DataCenters = nil
		return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
			var dc DataCenter
			err := d.mapping(e, p, map[string]field{
				"name":     d.str(&dc.Name),
				"endpoint": d.str(&dc.Endpoint),
				"region":   d.str(&dc.Region),
				"servers":  d.ints(&dc.Servers),
				"nodes":    d.strs(&dc.Nodes),
			}, "name", "servers")
			s.DataCenters = append(s.DataCenters, dc)
			return err
		})
	}
}

func decodeRTT(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		s.RTT = nil
		return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
			var r RTT
			var between []string
			err := d.mapping(e, p, map[string]field{
				"between": func(n *yaml.Node, path string) error {
					return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
						v, err := d.scalar(e, p)
						between = append(between, v)
						return err
					})
				},
				"ms":    d.float(&r.Ms),
				"sd_ms": d.float(&r.SDMs),
			}, "between", "ms")
			if err != nil {
				return err
			}
			if len(between) != 2 {
				return d.errf(e, join(p, "between"), "needs exactly two data centers, got %d", len(between))
			}
			r.Between = [2]string{between[0], between[1]}
			s.RTT = append(s.RTT, r)
			return nil
		})
	}
}

func decodeRates(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		s.Rates = Rates{}
		return d.mapping(n, path, map[string]field{
			"total": d.float(&s.Rates.Total),
			"shares": func(n *yaml.Node, path string) error {
				s.Rates.Shares = map[string]float64{}
				m := resolve(n)
				if m.Kind != yaml.MappingNode {
					return d.errf(m, path, "expected a mapping of data center to share, got %s", kind(m))
				}
				d.mark(m, path)
				for i := 0; i+1 < len(m.Content); i += 2 {
					k, v := m.Content[i], m.Content[i+1]
					p := join(path, k.Value)
					if _, dup := s.Rates.Shares[k.Value]; dup {
						return d.errf(k, p, "given twice")
					}
					d.mark(k, p)
					var f float64
					if err := d.float(&f)(v, p); err != nil {
						return err
					}
					s.Rates.Shares[k.Value] = f
				}
				return nil
			},
			"skew": func(n *yaml.Node, path string) error {
				sk := &Skew{}
				s.Rates.Skew = sk
				return d.mapping(n, path, map[string]field{
					"p": func(n *yaml.Node, path string) error {
						var p float64
						sk.P = &p
						return d.float(&p)(n, path)
					},
					"hot": d.str(&sk.Hot),
				}, "hot")
			},
		}, "total")
	}
}

func decodeOracle(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		o := score.Oracle{}
		defer func() { s.Oracle = o }()
		if resolve(n).Kind == yaml.ScalarNode {
			return d.str(&o.Name)(n, path)
		}
		return d.mapping(n, path, map[string]field{
			"name":       d.str(&o.Name),
			"preference": d.ints(&o.Preference),
			"combined": func(n *yaml.Node, path string) error {
				return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
					var c score.Criterion
					err := d.mapping(e, p, map[string]field{
						"score": d.str(&c.Score),
						"class": d.float(&c.Class),
					}, "score")
					o.Combined = append(o.Combined, c)
					return err
				})
			},
			"heartbeat": d.duration(&o.Heartbeat),
		}, "name")
	}
}

// decodeFlavor reads flavor: a name, or {name, settings} where settings are the
// flavor's own (what its package declares: backend.Flavor.Settings).
func decodeFlavor(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		if resolve(n).Kind == yaml.ScalarNode {
			return d.str(&s.Flavor)(n, path)
		}
		return d.mapping(n, path, map[string]field{
			"name":     d.str(&s.Flavor),
			"settings": decodeFlavorSettings(d, s),
		}, "name")
	}
}

func decodeFlavorSettings(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		s.FlavorSettings = map[string]string{}
		m := resolve(n)
		if m.Kind != yaml.MappingNode {
			return d.errf(m, path, "expected a mapping of setting to value, got %s", kind(m))
		}
		d.mark(m, path)
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			p := join(path, k.Value)
			if _, dup := s.FlavorSettings[k.Value]; dup {
				return d.errf(k, p, "given twice")
			}
			d.mark(k, p)
			raw, err := d.scalar(v, p)
			if err != nil {
				return err
			}
			s.FlavorSettings[k.Value] = raw
		}
		return nil
	}
}

func decodeZxids(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		s.Zxids = map[int]uint64{}
		m := resolve(n)
		if m.Kind != yaml.MappingNode {
			return d.errf(m, path, "expected a mapping of server id to zxid, got %s", kind(m))
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			p := join(path, k.Value)
			d.mark(k, p)
			id, err := strconv.Atoi(k.Value)
			if err != nil {
				return d.errf(k, p, "%q is not a server id", k.Value)
			}
			if _, dup := s.Zxids[id]; dup {
				return d.errf(k, p, "given twice")
			}
			raw, err := d.scalar(v, p)
			if err != nil {
				return err
			}
			z, err := strconv.ParseUint(raw, 0, 64)
			if err != nil {
				return d.errf(v, p, "%q is not a zxid (a non-negative integer, 0x... allowed)", raw)
			}
			s.Zxids[id] = z
		}
		return nil
	}
}

// N is the number of configured servers.
func (s *Spec) N() int {
	n := 0
	for _, dc := range s.DataCenters {
		n += len(dc.Servers)
	}
	return n
}

// RatesByDC resolves the rates section to req/s per data center name.
func (s *Spec) RatesByDC() map[string]float64 {
	out := map[string]float64{}
	k := len(s.DataCenters)
	r := s.Rates
	for _, dc := range s.DataCenters {
		switch {
		case r.Skew != nil && r.Skew.P != nil && k > 1:
			p := *r.Skew.P
			if dc.Name == r.Skew.Hot {
				out[dc.Name] = p * r.Total
			} else {
				out[dc.Name] = (1 - p) * r.Total / float64(k-1)
			}
		case r.Skew == nil && r.Shares != nil:
			out[dc.Name] = r.Shares[dc.Name] * r.Total
		default:
			out[dc.Name] = r.Total / float64(k)
		}
	}
	return out
}

// Nodes is each data center's nodes, for those that name them.
func (s *Spec) Nodes() map[string][]string {
	m := map[string][]string{}
	for _, dc := range s.DataCenters {
		if len(dc.Nodes) > 0 {
			m[dc.Name] = dc.Nodes
		}
	}
	return m
}

// Topology builds the deployment the spec describes.
func (s *Spec) Topology() (*topology.Topology, error) {
	t, err := topology.New(s.TopologyConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	return t, nil
}

// TopologyConfig is the deployment the spec describes, unchecked: what Topology
// builds, and what a placement controller process is given.
func (s *Spec) TopologyConfig() topology.Config {
	c := topology.Config{IntraRTT: s.IntraDCRTTMs, Rates: s.RatesByDC()}
	for _, dc := range s.DataCenters {
		c.DCs = append(c.DCs, topology.DC{Name: dc.Name, Endpoint: dc.Endpoint, Servers: dc.Servers})
	}
	given := map[[2]string]bool{}
	for _, r := range s.RTT {
		c.Links = append(c.Links, topology.Link{A: r.Between[0], B: r.Between[1], RTT: r.Ms, SD: r.SDMs})
		given[[2]string{r.Between[0], r.Between[1]}], given[[2]string{r.Between[1], r.Between[0]}] = true, true
	}
	// The regions preset fills the pairs of DCs with regions that no rtt entry gives.
	for i, a := range s.DataCenters {
		for _, b := range s.DataCenters[i+1:] {
			if a.Region == "" || b.Region == "" || given[[2]string{a.Name, b.Name}] {
				continue
			}
			if rtt, ok := topology.RegionRTT(a.Region, b.Region); ok {
				c.Links = append(c.Links, topology.Link{A: a.Name, B: b.Name, RTT: rtt})
			}
		}
	}
	return c
}
