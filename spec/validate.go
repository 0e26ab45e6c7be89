package spec

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/workload/arrival"
)

// where is the position of a field path: its own, or that of the closest enclosing
// field that has one (a default value has none, so the spec's file is named).
func (s *Spec) where(path string) string {
	for p := path; p != ""; {
		if pos, ok := s.pos[p]; ok {
			return pos
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return s.File
}

func (s *Spec) errf(path, format string, args ...any) error {
	return &Error{Pos: s.where(path), Field: path, Msg: fmt.Sprintf(format, args...)}
}

// validate checks everything that spans fields or that an override can change.
func (s *Spec) validate() error {
	for _, check := range []func() error{s.checkName, s.checkDataCenters, s.checkRTT, s.checkRates, s.checkOracle, s.checkRun, s.checkWorkload, s.checkSettings, s.checkLinks, s.checkFaults, s.checkFlavor, s.checkPlacement} {
		if err := check(); err != nil {
			return err
		}
	}
	// Everything topology.New rejects has been reported above with its line; this
	// catches any gap between the two.
	_, err := s.Topology()
	return err
}

func (s *Spec) checkName() error {
	if strings.TrimSpace(s.Name) == "" {
		return s.errf("name", "must not be empty")
	}
	return nil
}

func (s *Spec) checkDataCenters() error {
	if len(s.DataCenters) == 0 {
		return s.errf("datacenters", "at least one data center is needed")
	}
	names := map[string]int{}
	owner := map[int]string{}
	max := 0
	for i, dc := range s.DataCenters {
		p := index("datacenters", i)
		if dc.Name == "" {
			return s.errf(p+".name", "must not be empty")
		}
		if j, dup := names[dc.Name]; dup {
			return s.errf(p+".name", "data center %q is already datacenters[%d]", dc.Name, j)
		}
		names[dc.Name] = i
		if dc.Endpoint != "" {
			if !topology.KnownEndpoint(dc.Endpoint) {
				return s.errf(p+".endpoint", "unknown endpoint %q (known: %s)", dc.Endpoint, strings.Join(topology.Endpoints(), ", "))
			}
		}
		if dc.Region != "" {
			if dc.Endpoint != "" {
				return s.errf(p+".region", "a data center has an endpoint or a region, not both")
			}
			if !topology.KnownRegion(dc.Region) {
				return s.errf(p+".region", "unknown region %q (the preset, topology/regions/azure.csv, has: %s)", dc.Region, strings.Join(topology.Regions(), ", "))
			}
			for _, o := range s.DataCenters[:i] {
				if o.Region == dc.Region {
					return s.errf(p+".region", "region %q is already data center %q's: two DCs in one region have no published RTT (give an rtt entry, or use intra_dc_rtt_ms in one DC)", dc.Region, o.Name)
				}
			}
		}
		if len(dc.Servers) == 0 {
			return s.errf(p+".servers", "a data center needs at least one server")
		}
		for k, nd := range dc.Nodes {
			np := fmt.Sprintf("%s.nodes[%d]", p, k)
			if strings.TrimSpace(nd) == "" {
				return &Error{Pos: s.where(np), Field: p + ".nodes", Msg: "a node's host name or ID must not be empty"}
			}
			if slices.Contains(dc.Nodes[:k], nd) {
				return &Error{Pos: s.where(np), Field: p + ".nodes", Msg: fmt.Sprintf("node %q is named twice", nd)}
			}
		}
		for k, id := range dc.Servers {
			sp := fmt.Sprintf("%s.servers[%d]", p, k)
			if o, dup := owner[id]; dup {
				return &Error{Pos: s.where(sp), Field: p + ".servers", Msg: fmt.Sprintf("server %d is already in DC %q", id, o)}
			}
			if id < 1 {
				return &Error{Pos: s.where(sp), Field: p + ".servers", Msg: fmt.Sprintf("server id %d: ids are 1..N", id)}
			}
			owner[id] = dc.Name
			if id > max {
				max = id
			}
		}
	}
	// Ids are distinct and positive, so they are 1..N exactly when the largest is N.
	n := len(owner)
	if max == n {
		return nil
	}
	var missing, extra []string
	for id := 1; id <= n; id++ {
		if _, ok := owner[id]; !ok {
			missing = append(missing, topology.Name(id))
		}
	}
	for id := range owner {
		if id > n {
			extra = append(extra, topology.Name(id))
		}
	}
	sort.Strings(extra)
	return s.errf("datacenters", "server ids must be exactly 1..N with N = %d servers: missing %s, beyond N %s",
		n, strings.Join(missing, ", "), strings.Join(extra, ", "))
}

func (s *Spec) dcIndex(name string) (int, bool) {
	for i, dc := range s.DataCenters {
		if dc.Name == name {
			return i, true
		}
	}
	return 0, false
}

func (s *Spec) checkRTT() error {
	if s.IntraDCRTTMs < 0 || math.IsNaN(s.IntraDCRTTMs) {
		return s.errf("intra_dc_rtt_ms", "%v ms is negative", s.IntraDCRTTMs)
	}
	given := map[[2]int]bool{}
	for i, r := range s.RTT {
		p := index("rtt", i)
		var ends [2]int
		for k, name := range r.Between {
			j, ok := s.dcIndex(name)
			if !ok {
				return s.errf(fmt.Sprintf("%s.between[%d]", p, k), "unknown data center %q", name)
			}
			ends[k] = j
		}
		if ends[0] == ends[1] {
			return s.errf(p+".between", "both ends are %q (the RTT inside a DC is intra_dc_rtt_ms)", r.Between[0])
		}
		if r.Ms < 0 {
			return s.errf(p+".ms", "%v ms is negative", r.Ms)
		}
		if r.SDMs < 0 {
			return s.errf(p+".sd_ms", "%v ms is negative", r.SDMs)
		}
		key := [2]int{min(ends[0], ends[1]), max(ends[0], ends[1])}
		if given[key] {
			return s.errf(p+".between", "the RTT between %q and %q is already given", r.Between[0], r.Between[1])
		}
		given[key] = true
	}
	for a := range s.DataCenters {
		for b := a + 1; b < len(s.DataCenters); b++ {
			if given[[2]int{a, b}] {
				continue
			}
			da, db := s.DataCenters[a], s.DataCenters[b]
			if _, ok := topology.RegionRTT(da.Region, db.Region); ok {
				continue
			}
			if (da.Region == "") != (db.Region == "") {
				return s.errf(index("datacenters", b), "no RTT between %q and %q: one has a region, the other not; add an rtt entry", da.Name, db.Name)
			}
			if _, _, ok := topology.EndpointRTT(da.Endpoint, db.Endpoint); !ok {
				return s.errf(index("datacenters", b), "no RTT between %q and %q: add an rtt entry, or endpoints that Table 2 pairs (%s)",
					da.Name, db.Name, topology.PairHint(da.Endpoint, db.Endpoint))
			}
		}
	}
	return nil
}

func (s *Spec) checkRates() error {
	r := s.Rates
	if r.Total < 0 || math.IsNaN(r.Total) {
		return s.errf("rates.total", "rate %v req/s is negative", r.Total)
	}
	if r.Shares != nil && r.Skew != nil {
		return s.errf("rates", "give shares or skew, not both")
	}
	if r.Shares != nil {
		names := make([]string, 0, len(r.Shares))
		for n := range r.Shares {
			names = append(names, n)
		}
		sort.Strings(names)
		sum := 0.0
		for _, n := range names {
			p := "rates.shares." + n
			if _, ok := s.dcIndex(n); !ok {
				return s.errf(p, "unknown data center %q", n)
			}
			if r.Shares[n] < 0 {
				return s.errf(p, "share %v is negative", r.Shares[n])
			}
			sum += r.Shares[n]
		}
		if math.Abs(sum-1) > 1e-6 {
			return s.errf("rates.shares", "shares sum to %v, not 1", sum)
		}
	}
	if sk := r.Skew; sk != nil {
		if sk.P != nil && !(*sk.P >= 0 && *sk.P <= 1) {
			return s.errf("rates.skew.p", "p = %v is outside [0, 1]", *sk.P)
		}
		if sk.Hot == "" {
			return s.errf("rates.skew.hot", "missing: the skew needs the hot data center (the one that gets p of the load)")
		}
		if _, ok := s.dcIndex(sk.Hot); !ok {
			return s.errf("rates.skew.hot", "unknown data center %q", sk.Hot)
		}
	}
	return nil
}

func (s *Spec) checkOracle() error {
	if err := s.Oracle.Check(s.N()); err != nil {
		path := "oracle"
		switch {
		case len(s.Oracle.Preference) > 0 && s.Oracle.Name == score.Preference:
			path = "oracle.preference"
		case len(s.Oracle.Combined) > 0 && s.Oracle.Name == score.Combined:
			path = "oracle.combined"
		case s.pos["oracle.name"] != "":
			path = "oracle.name"
		}
		return s.errf(path, "%v", err)
	}
	for id := range s.Zxids {
		if id < 1 || id > s.N() {
			return s.errf(fmt.Sprintf("zxids.%d", id), "server %d is not in 1..%d", id, s.N())
		}
	}
	return nil
}

func (s *Spec) checkRun() error {
	n := s.N()
	if s.InitialLeader < 1 || s.InitialLeader > n {
		return s.errf("initial_leader", "%d is not a server (1..%d)", s.InitialLeader, n)
	}
	if s.Duration <= 0 {
		return s.errf("duration", "%v must be positive", s.Duration)
	}
	if s.CrashAt < 0 {
		return s.errf("crash_at", "%v is negative", s.CrashAt)
	}
	if s.CrashAt >= s.Duration {
		return s.errf("crash_at", "%v is not before the end of the run (duration %v)", s.CrashAt, s.Duration)
	}
	if s.InitLimit < 0 {
		return s.errf("init_limit", "%v is negative (leave it out for the default, sized from the state and the links)", s.InitLimit)
	}
	return nil
}

func (s *Spec) checkWorkload() error {
	w := s.Workload
	for _, f := range []struct {
		path string
		v    int
	}{
		{"workload.payload_bytes", w.PayloadBytes},
		{"workload.sessions_per_server", w.SessionsPerServer},
		{"workload.keys", w.Keys},
	} {
		if f.v < 1 {
			return s.errf(f.path, "%d must be at least 1", f.v)
		}
	}
	if !slices.Contains(arrival.Kinds(), w.Arrival) {
		return s.errf("workload.arrival", "unknown arrival %q (known: %s)", w.Arrival, arrivalNames())
	}
	if w.Warmup < 0 {
		return s.errf("workload.warmup", "%v is negative", w.Warmup)
	}
	if w.Settle <= 0 {
		return s.errf("workload.settle", "%v is not positive", w.Settle)
	}
	// The warmup must leave time to measure before the crash (or before the end).
	end, endField, what := s.Duration, "duration", "the end of the run"
	if s.CrashAt > 0 {
		end, endField, what = s.CrashAt, "crash_at", "the crash"
	}
	if w.Warmup >= end {
		// Blame the warmup only if someone set it: a default has no line.
		if _, set := s.pos["workload.warmup"]; set {
			return s.errf("workload.warmup", "%v is not before %s %v: nothing would be measured before %s", w.Warmup, endField, end, what)
		}
		return s.errf(endField, "%v is not after the warmup (workload.warmup, default %v): nothing would be measured before %s", end, w.Warmup, what)
	}
	return nil
}

func (s *Spec) checkSettings() error {
	if s.PreloadMB < 0 {
		return s.errf("preload_mb", "%d MB is negative", s.PreloadMB)
	}
	if s.Repetitions < 1 {
		return s.errf("repetitions", "%d: at least 1 run is needed", s.Repetitions)
	}
	// The backends are those the program links (each registers its name); the default
	// is valid even in one that links none, which reads specs only for their layout
	// (the model, the VM test's guest, the tests of the cores).
	if s.Backend != DefaultBackend && !slices.Contains(backend.Names(), s.Backend) {
		return s.errf("backend", "unknown backend %q (known: %s)", s.Backend, strings.Join(backend.Names(), ", "))
	}
	l := s.Links
	if !(l.JitterPct >= 0 && l.JitterPct <= 100) {
		return s.errf("links.jitter_pct", "%v%% is outside [0, 100]", l.JitterPct)
	}
	if !slices.Contains(netem.Dists, l.Dist) {
		return s.errf("links.distribution", "unknown distribution %q (known: %s)", l.Dist, strings.Join(netem.Dists, ", "))
	}
	if l.WindowBytes < 1<<10 || l.WindowBytes > maxWindowKB<<10 {
		return s.errf("links.window_kb", "%d bytes is outside 1 kB .. 1 GiB (TCP's largest window)", l.WindowBytes)
	}
	return nil
}

// checkFaults checks each outdate and fault, then plays the schedule: only a live
// server can be killed, only a dead one restarted.
func (s *Spec) checkFaults() error {
	n := s.N()
	server := func(path string, id int) error {
		if id < 1 || id > n {
			return s.errf(path, "server %d is not one of p1..p%d", id, n)
		}
		return nil
	}
	inRun := func(path string, t time.Duration) error {
		if t < 0 || t >= s.Duration {
			return s.errf(path, "%v is outside the run [0, %v)", t, s.Duration)
		}
		return nil
	}
	for i, o := range s.Outdate {
		p := index("outdate", i)
		if err := server(p+".server", o.Server); err != nil {
			return err
		}
		if o.Server == s.InitialLeader {
			return s.errf(p+".server", "%s is the initial leader: an outdated server is a follower that misses writes", topology.Name(o.Server))
		}
		if err := inRun(p+".kill_at", o.KillAt); err != nil {
			return err
		}
		if o.RestartAt <= o.KillAt {
			return s.errf(p+".restart_at", "%v is not after kill_at %v", o.RestartAt, o.KillAt)
		}
		if err := inRun(p+".restart_at", o.RestartAt); err != nil {
			return err
		}
	}
	for i, f := range s.Faults {
		p := index("faults", i)
		if err := inRun(p+".at", f.At); err != nil {
			return err
		}
		set := 0
		for _, on := range []bool{f.Kill != 0, f.Restart != 0, f.Partition != nil, f.Isolate != 0, f.Heal,
			f.Shape != "", f.IsolateLeader, f.IsolateDC != "", f.OneWay != nil, f.Pause != 0, f.Resume != 0,
			f.LoseUnsynced != 0, f.TornTail != 0, f.SlowDisk != nil, f.KillController, f.RestartController} {
			if on {
				set++
			}
		}
		if set != 1 {
			return s.errf(p, "needs exactly one of kill, restart (a server id, or controller), pause, resume, lose_unsynced, torn_tail (a server id), partition (groups of ids, or a shape: %s), isolate (a server id, or leader), isolate_dc (a data center), one_way ([[from ids], [to ids]]), slow_disk ({server, delay}), heal: true",
				strings.Join(nemesis.Shapes, ", "))
		}
		for _, id := range []struct {
			field string
			id    int
		}{{"pause", f.Pause}, {"resume", f.Resume}, {"lose_unsynced", f.LoseUnsynced}, {"torn_tail", f.TornTail}} {
			if id.id != 0 {
				if err := server(p+"."+id.field, id.id); err != nil {
					return err
				}
			}
		}
		switch {
		case f.Shape != "":
			if !slices.Contains(nemesis.Shapes, f.Shape) {
				return s.errf(p+".partition", "unknown shape %q (known: %s; or groups of ids)", f.Shape, strings.Join(nemesis.Shapes, ", "))
			}
			if n < 3 {
				return s.errf(p+".partition", "a shape needs at least 3 servers, the spec has %d", n)
			}
		case f.IsolateDC != "":
			if !slices.ContainsFunc(s.DataCenters, func(dc DataCenter) bool { return dc.Name == f.IsolateDC }) {
				return s.errf(p+".isolate_dc", "unknown data center %q", f.IsolateDC)
			}
			if len(s.DataCenters) < 2 {
				return s.errf(p+".isolate_dc", "one data center: nothing to cut it from")
			}
		case f.OneWay != nil:
			if len(f.OneWay) != 2 {
				return s.errf(p+".one_way", "want [[from ids], [to ids]], got %d groups", len(f.OneWay))
			}
			if err := s.checkGroups(p+".one_way", f.OneWay, server); err != nil {
				return err
			}
		case f.SlowDisk != nil:
			if err := server(p+".slow_disk.server", f.SlowDisk.Server); err != nil {
				return err
			}
			if f.SlowDisk.Delay < 0 || f.SlowDisk.Delay > 10*time.Second {
				return s.errf(p+".slow_disk.delay", "%v is outside [0, 10s] (0 restores the disk)", f.SlowDisk.Delay)
			}
		}
		switch {
		case f.Kill != 0:
			if err := server(p+".kill", f.Kill); err != nil {
				return err
			}
		case f.Restart != 0:
			if err := server(p+".restart", f.Restart); err != nil {
				return err
			}
		case f.Isolate != 0:
			if err := server(p+".isolate", f.Isolate); err != nil {
				return err
			}
		case f.Partition != nil:
			if err := s.checkGroups(p+".partition", f.Partition, server); err != nil {
				return err
			}
		}
	}
	killedBy := map[int]nemesis.Fault{}
	paused := map[int]nemesis.Fault{}
	for _, e := range s.schedule() {
		switch e.Kind {
		case nemesis.Pause:
			if k, dead := killedBy[e.Server]; dead {
				return s.errf(e.Source, "%s is dead at %v (killed at %v by %s): only a running server can pause", topology.Name(e.Server), e.At, k.At, k.Source)
			}
			if p, ok := paused[e.Server]; ok {
				return s.errf(e.Source, "%s is paused already at %v (by %s at %v)", topology.Name(e.Server), e.At, p.Source, p.At)
			}
			paused[e.Server] = e
		case nemesis.Resume:
			if _, ok := paused[e.Server]; !ok {
				return s.errf(e.Source, "%s is not paused at %v: only a paused server can resume", topology.Name(e.Server), e.At)
			}
			delete(paused, e.Server)
		}
		if e.Kind != nemesis.Restart && !e.Stops() {
			continue
		}
		if e.Stops() {
			delete(paused, e.Server) // a kill ends a pause
			if k, dead := killedBy[e.Server]; dead {
				return s.errf(e.Source, "%s is already dead at %v (killed at %v by %s)", topology.Name(e.Server), e.At, k.At, k.Source)
			}
			killedBy[e.Server] = e
			continue
		}
		if _, dead := killedBy[e.Server]; !dead {
			return s.errf(e.Source, "%s is not dead at %v: only a killed server can restart", topology.Name(e.Server), e.At)
		}
		delete(killedBy, e.Server)
	}
	return nil
}

// checkGroups checks a partition's groups: at least two, none empty, valid and
// distinct server ids.
func (s *Spec) checkGroups(path string, groups [][]int, server func(string, int) error) error {
	if len(groups) < 2 {
		return s.errf(path, "a partition needs at least two groups, got %d", len(groups))
	}
	in := map[int]int{}
	for g, ids := range groups {
		gp := index(path, g)
		if len(ids) == 0 {
			return s.errf(gp, "an empty group")
		}
		for k, id := range ids {
			if err := server(index(gp, k), id); err != nil {
				return err
			}
			if h, dup := in[id]; dup {
				return s.errf(index(gp, k), "%s is already in group %d", topology.Name(id), h)
			}
			in[id] = g
		}
	}
	return nil
}

// checkFlavor checks the spec against what its flavor declares (backend.Flavor): the
// oracles its election follows, its first leader, the backends it runs on, whether it
// preloads state, and the faults it plays; then the faults against its backend's.
func (s *Spec) checkFlavor() error {
	f, known := backend.LookupFlavor(s.Flavor)
	switch {
	case !known && s.Flavor == DefaultFlavor:
		return nil // a program that links no backend reads specs for their layout only
	case !known:
		return s.errf("flavor", "unknown flavor %q (known: %s)", s.Flavor, strings.Join(backend.Flavors(), ", "))
	}
	fl := "flavor " + f.Name
	why := f.Carries.Reason
	if f.Oracles != nil && !slices.Contains(f.Oracles, s.Oracle.Name) {
		path := "oracle"
		if s.pos["oracle.name"] != "" {
			path = "oracle.name"
		}
		return s.errf(path, "%s: only the %s oracle exists (%s), not %q", fl, backend.List(f.Oracles), why("oracle"), s.Oracle.Name)
	}
	if n := s.N(); f.HighestFirst && s.InitialLeader != n {
		return s.errf("initial_leader", "%s: %s, so the initial leader must be %s, not %s",
			fl, why("initial_leader"), topology.Name(n), topology.Name(s.InitialLeader))
	}
	if _, ok := backend.Lookup(s.Backend); ok && !backend.Runs(s.Backend, s.Flavor) {
		return s.errf("backend", "%s runs on the %s backends, not %q", fl, backend.List(backend.For(s.Flavor)), s.Backend)
	}
	if s.PreloadMB != 0 && !f.Preload {
		return s.errf("preload_mb", "%s: %s", fl, why("preload_mb"))
	}
	if len(s.Outdate) > 0 && !f.Carries.Plays(nemesis.Outdate) {
		return s.errf("outdate", "%s: %s", fl, why("outdate"))
	}
	var plays []string
	for _, k := range f.Carries.Faults {
		if k != nemesis.Crash {
			plays = append(plays, string(k))
		}
	}
	kinds := map[string]nemesis.Kind{} // faults[i] -> its kind
	for _, e := range s.schedule() {
		entry, _, _ := strings.Cut(e.Source, ".")
		kinds[entry] = e.Kind
	}
	for i, ft := range s.Faults {
		if ft.KillController || ft.RestartController {
			continue // the harness's own (checkPlacement)
		}
		if k := kinds[index("faults", i)]; !f.Carries.Plays(k) {
			return s.errf(index("faults", i), "%s: only %s faults (%s)", fl, backend.List(plays), why(string(k)))
		}
	}
	if err := s.checkFlavorSettings(f); err != nil {
		return err
	}
	return s.checkBackendFaults()
}

// checkFlavorSettings checks flavor.settings against what the flavor declares
// (backend.Flavor.Settings) and resolves them with their defaults, so that the run
// directory's spec.resolved.json has what the servers ran.
func (s *Spec) checkFlavorSettings(f backend.Flavor) error {
	if f.Settings == nil {
		if len(s.FlavorSettings) > 0 {
			return s.errf("flavor.settings", "flavor %s has no settings of its own", f.Name)
		}
		return nil
	}
	t, err := s.Topology()
	if err != nil {
		return err
	}
	var widest float64
	for _, a := range t.Servers() {
		for _, b := range t.Servers() {
			widest = max(widest, t.RTT(a, b))
		}
	}
	res, err := f.Settings(s.FlavorSettings, time.Duration(widest*float64(time.Millisecond)))
	var se *backend.SettingError
	if errors.As(err, &se) {
		return s.errf(join("flavor.settings", se.Key), "flavor %s: %s", f.Name, se.Msg)
	}
	if err != nil {
		return s.errf("flavor.settings", "flavor %s: %v", f.Name, err)
	}
	s.FlavorSettings = res
	return nil
}

// checkBackendFaults refuses a fault the spec's backend does not play, as it declares.
func (s *Spec) checkBackendFaults() error {
	b, known := backend.Lookup(s.Backend)
	if !known {
		return nil
	}
	for _, e := range s.schedule() {
		if !b.Carries.Plays(e.Kind) {
			return s.errf(e.Source, "the %s backend does not play %s faults: %s", b.Name, e.Kind, b.Carries.Reason(string(e.Kind)))
		}
	}
	return nil
}
