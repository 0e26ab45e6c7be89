// Package benchdata is the nightly benchmark's data: bench.json (every sample of every
// metric, its unit, which direction is better, and the environment), built from run
// directories on disk (their summary.json files are the contract), the comparison of two
// of them with a Mann-Whitney U test and a minimum effect size, and the history of
// nights with change points.
package benchdata

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster/backend"
)

// FormatVersion is bench.json's "format"; a reader refuses a newer one.
const FormatVersion = 1

// FileName is the name of the file nightly writes and Load looks for in a directory.
const FileName = "bench.json"

// Better says which direction of a metric is an improvement.
type Better string

const (
	Lower  Better = "lower"
	Higher Better = "higher"
	// Neither is a number of the host, not of the code (nightly's sim-speed
	// host_ref_ms): compare says when it moved and never fails on it.
	Neither Better = "neither"
)

// MinEffect is the smallest change of a median that counts: a significant change
// smaller than max(Abs, Rel·|old median|) is reported as noise, not as a regression.
type MinEffect struct {
	Abs float64 `json:"abs"` // in the metric's unit
	Rel float64 `json:"rel"` // fraction of the old median
}

// Threshold is the smallest change of a median from old that counts.
func (m MinEffect) Threshold(old float64) float64 {
	return max(m.Abs, m.Rel*abs(old))
}

// Metric is one measured quantity of one experiment with every sample (one per
// repetition).
type Metric struct {
	// Name is "<experiment>/<key>", e.g. "two-dc-crash/latency.mean.before.D1".
	Name      string    `json:"name"`
	Unit      string    `json:"unit"`
	Better    Better    `json:"better"`
	MinEffect MinEffect `json:"min_effect"`
	Samples   []float64 `json:"samples"`
	// Deterministic marks a simulated metric: the same build, spec and seeds give the
	// same samples, so Compare reports any change of them (CHANGED), not only a
	// significant one.
	Deterministic bool `json:"deterministic,omitempty"`
	// Host is the host's verdict on the run of each sample, in the samples' order
	// (analysis.Summary.RunVerdict: trusted, degraded, untrusted, or "" for a run that
	// measured no host); nil when no run did (simulated runs, bench entries, files
	// from before the meter). Compare counts and, with TrustedOnly, filters by it.
	Host []string `json:"host,omitempty"`
	// WindowHost is, for a metric of one window (latency.*.<window>.<dc>,
	// measured_minus_model.<window>.<dc>), the host's verdict on that window of each
	// sample's run, in the samples' order; nil where Host is nil or the metric spans
	// the run. The fidelity rules judge a window's numbers only where the host
	// trusted that window; compare's TrustedOnly keeps to Host.
	WindowHost []string `json:"window_host,omitempty"`
}

// Median of the samples (NaN without any).
func (m Metric) Median() float64 { return Median(m.Samples) }

// Env is where the numbers were measured.
type Env struct {
	Date    time.Time `json:"date"`
	Version string    `json:"polebench_version,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	Kernel  string    `json:"kernel,omitempty"` // uname: system, release, machine
	// Links is how the runs' links were emulated, as their servers.json says
	// ("kernel" netem or "user-space"), one entry per kind seen.
	Links []string `json:"links,omitempty"`
	CPUs  int      `json:"cpus,omitempty"`
	Go    string   `json:"go_version,omitempty"`
	// Suite names the nightly suite the night ran, and Quick says it ran the suite's
	// --quick set: nights of another suite or of the other length are no baseline.
	Suite string `json:"suite,omitempty"`
	Quick bool   `json:"quick,omitempty"`
	// Planted lists the overrides `nightly --set` applied to every run entry: such a
	// night is a planted regression, never a baseline.
	Planted []string `json:"planted,omitempty"`
}

// File is bench.json.
type File struct {
	Format  int      `json:"format"`
	Env     Env      `json:"environment"`
	Metrics []Metric `json:"metrics"` // sorted by name
	// Incomplete names experiments with fewer samples than repetitions planned.
	Incomplete []string `json:"incomplete,omitempty"`
	// Fidelity is each nightly entry's verdict against its goal (nightly writes it;
	// files of other origin have none). Added in format 1 without a bump: readers of
	// the format ignore it.
	Fidelity []Fidelity `json:"fidelity,omitempty"`
}

// Metric returns the metric called name.
func (f *File) Metric(name string) (Metric, bool) {
	i := slices.IndexFunc(f.Metrics, func(m Metric) bool { return m.Name == name })
	if i < 0 {
		return Metric{}, false
	}
	return f.Metrics[i], true
}

// WriteFile writes f as indented JSON.
func (f *File) WriteFile(path string) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("benchdata: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("benchdata: %w", err)
	}
	return nil
}

// ReadFile reads a bench.json.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchdata: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("benchdata: %s: %w", path, err)
	}
	if f.Format < 1 || f.Format > FormatVersion {
		return nil, fmt.Errorf("benchdata: %s: format %d, this polebench reads 1..%d", path, f.Format, FormatVersion)
	}
	for _, m := range f.Metrics {
		if err := checkHost(m.Host, len(m.Samples)); err != nil {
			return nil, fmt.Errorf("benchdata: %s: metric %s: %w", path, m.Name, err)
		}
		if err := checkHost(m.WindowHost, len(m.Samples)); err != nil {
			return nil, fmt.Errorf("benchdata: %s: metric %s: window_host: %w", path, m.Name, err)
		}
	}
	return &f, nil
}

// checkHost checks a metric's host verdicts against its n samples.
func checkHost(host []string, n int) error {
	if host == nil {
		return nil
	}
	if len(host) != n {
		return fmt.Errorf("host has %d verdicts for %d samples", len(host), n)
	}
	for i, v := range host {
		switch v {
		case "", analysis.Trusted, analysis.Degraded, analysis.Untrusted:
		default:
			return fmt.Errorf("host[%d] is %q, want %s, %s, %s or empty", i, v, analysis.Trusted, analysis.Degraded, analysis.Untrusted)
		}
	}
	return nil
}

// measuredHost is host, or nil when none of its verdicts says anything.
func measuredHost(host []string) []string {
	if slices.ContainsFunc(host, func(v string) bool { return v != "" }) {
		return host
	}
	return nil
}

// windowVerdict is the host's verdict on the window a metric key of run s measures
// (latency.mean.<window>.<dc>, ...), or its run's verdict for a key of the whole run.
func windowVerdict(s *analysis.Summary, key, run string) string {
	for _, k := range kinds {
		if rest, ok := strings.CutPrefix(key, k.prefix); ok && strings.HasSuffix(k.prefix, ".") {
			if w, _, ok := strings.Cut(rest, "."); ok {
				if h := s.Host[w]; h != nil {
					return h.Verdict
				}
			}
		}
	}
	return run
}

// windowHost is a metric's window verdicts, or nil where they say no more than its
// runs' (a metric of the whole run, or no host measured).
func windowHost(run, window []string) []string {
	if measuredHost(run) == nil || slices.Equal(run, window) {
		return nil
	}
	return window
}

// Load reads a bench.json file, or a directory: its bench.json if it has one, else the
// run directories in it (see Collect).
func Load(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("benchdata: %w", err)
	}
	if !st.IsDir() {
		return ReadFile(path)
	}
	if p := filepath.Join(path, FileName); exists(p) {
		return ReadFile(p)
	}
	return Collect(path)
}

// kind is what a metric key's leading part says about unit, direction and noise.
type kind struct {
	prefix string
	unit   string
	better Better
	effect MinEffect
}

// kinds sets the minimum effect per metric. Latency means move with the machine's load
// by well under a millisecond; tails, election and recovery times, and the pacer's lag
// are noisier, so they need a larger change before it counts.
var kinds = []kind{
	{"latency.mean.", "ms", Lower, MinEffect{Abs: 1, Rel: 0.05}},
	{"latency.p99.", "ms", Lower, MinEffect{Abs: 2, Rel: 0.10}},
	// Measured minus the model's prediction: the harness's and poled's own overhead.
	{"measured_minus_model.", "ms", Lower, MinEffect{Abs: 1, Rel: 0.10}},
	{"election_ms", "ms", Lower, MinEffect{Abs: 50, Rel: 0.10}},
	{RTTErrorKey, "%", Lower, MinEffect{Abs: 5, Rel: 0.25}},
	{"recovery_ms", "ms", Lower, MinEffect{Abs: 10, Rel: 0.20}},
	{"writes_per_s", "writes/s", Higher, MinEffect{Abs: 5, Rel: 0.02}},
	{"send_lag_p99_ms", "ms", Lower, MinEffect{Abs: 5, Rel: 0.50}},
	// Any lost acknowledged write fails on its own (Compare); no effect size applies.
	{"lost_acknowledged_writes", "writes", Lower, MinEffect{}},
}

// LostWrites is the key of the lost acknowledged writes metric.
const LostWritesKey = "lost_acknowledged_writes"

// RTTErrorKey is the largest error of the servers' RTT measurements against the
// links' plan, in % (analysis.RTTCheck).
const RTTErrorKey = "rtt_error_pct_max"

func kindOf(key string) kind {
	for _, k := range kinds {
		if strings.HasPrefix(key, k.prefix) {
			return k
		}
	}
	return kind{unit: "", better: Lower}
}

// Key is the part of a metric name after the experiment.
func Key(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// SummaryMetrics returns a run's metrics by key, from its summary.json.
func SummaryMetrics(s *analysis.Summary) map[string]float64 {
	m := map[string]float64{
		"writes_per_s":    s.AchievedRate,
		"send_lag_p99_ms": s.SendLagMS.P99,
		LostWritesKey:     float64(s.LostAcknowledgedWrites),
	}
	if s.ElectionMS != nil {
		m["election_ms"] = *s.ElectionMS
	}
	if s.RecoveryMS != nil {
		m["recovery_ms"] = *s.RecoveryMS
	}
	if s.RTT != nil {
		m[RTTErrorKey] = s.RTT.MaxErrorPct
	}
	for win, byDC := range s.LatencyMS {
		for dc, st := range byDC {
			if st.Count == 0 {
				continue
			}
			m["latency.mean."+win+"."+dc] = st.Mean
			m["latency.p99."+win+"."+dc] = st.P99
			if st.ModelMS != nil {
				m["measured_minus_model."+win+"."+dc] = st.Mean - *st.ModelMS
			}
		}
	}
	return m
}

// Collect builds a File from the run directories under root (root itself, a campaign
// or a nightly directory): a run directory has spec.resolved.json, and a summary.json
// of its own (one repetition) or in rep1, rep2, ... An experiment is named by its run
// directory's path below root, or by the spec's name when root is the run directory.
// Env gets only what the directories say (the links); the caller adds the rest.
func Collect(root string) (*File, error) { return CollectWith(root, nil) }

// ModelFunc gives, for a repetition's directory, the model's mean latency by window
// and DC to judge its measured means by instead of its summary's (nil: the summary's).
type ModelFunc func(repDir string) (map[string]map[string]float64, error)

// CollectWith is Collect with measured_minus_model taken against model's means where
// model gives them: a planted night judges its runs by the model of the experiment as
// its suite wrote it (package nightly).
func CollectWith(root string, model ModelFunc) (*File, error) {
	var runs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && exists(filepath.Join(p, "spec.resolved.json")) {
			runs = append(runs, p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("benchdata: %w", err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("benchdata: %s: no bench.json and no run directory (one with spec.resolved.json) in it", root)
	}
	f := &File{Format: FormatVersion, Metrics: []Metric{}}
	samples := map[string][]float64{}
	hosts := map[string][]string{}   // beside samples: the host's verdict on each one's run
	windows := map[string][]string{} // and on its own window, for a metric of one window
	simulated := map[string]bool{}   // experiment → its runs were simulated (deterministic)
	links := map[string]bool{}
	for _, dir := range runs {
		var sp struct {
			Name        string
			Repetitions int
			Backend     string
		}
		if err := readJSON(filepath.Join(dir, "spec.resolved.json"), &sp); err != nil {
			return nil, err
		}
		exp := sp.Name
		if rel, _ := filepath.Rel(root, dir); rel != "." {
			exp = filepath.ToSlash(rel)
		}
		simulated[exp] = sp.Backend == backend.Sim
		reps, err := repDirs(dir)
		if err != nil {
			return nil, err
		}
		got := 0
		for _, rd := range reps {
			var srv struct{ Links string }
			if readJSON(filepath.Join(rd, "servers.json"), &srv) == nil && srv.Links != "" {
				links[srv.Links] = true
			}
			p := filepath.Join(rd, "summary.json")
			if !exists(p) {
				continue
			}
			s, err := analysis.ReadSummary(p)
			if err != nil {
				return nil, fmt.Errorf("benchdata: %w", err)
			}
			got++
			verdict := s.RunVerdict()
			metrics := SummaryMetrics(s)
			if model != nil {
				if err := remodel(metrics, s, rd, model); err != nil {
					return nil, err
				}
			}
			for key, v := range metrics {
				samples[exp+"/"+key] = append(samples[exp+"/"+key], v)
				hosts[exp+"/"+key] = append(hosts[exp+"/"+key], verdict)
				windows[exp+"/"+key] = append(windows[exp+"/"+key], windowVerdict(s, key, verdict))
			}
		}
		if want := max(sp.Repetitions, 1); got < want {
			f.Incomplete = append(f.Incomplete, fmt.Sprintf("%s: %d of %d repetitions have a summary.json", exp, got, want))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(samples)) {
		k := kindOf(Key(name))
		f.Metrics = append(f.Metrics, Metric{Name: name, Unit: k.unit, Better: k.better, MinEffect: k.effect, Samples: samples[name],
			Deterministic: simulated[name[:strings.LastIndex(name, "/")]], Host: measuredHost(hosts[name]), WindowHost: windowHost(hosts[name], windows[name])})
	}
	f.Env.Links = slices.Sorted(maps.Keys(links))
	return f, nil
}

// remodel puts model's means for rd in place of the summary's in m's
// measured_minus_model metrics; a window or DC the model gives no mean for has none.
func remodel(m map[string]float64, s *analysis.Summary, rd string, model ModelFunc) error {
	ms, err := model(rd)
	if err != nil || ms == nil {
		return err
	}
	for win, byDC := range s.LatencyMS {
		for dc, st := range byDC {
			key := "measured_minus_model." + win + "." + dc
			delete(m, key)
			if mean, ok := ms[win][dc]; ok && st.Count > 0 {
				m[key] = st.Mean - mean
			}
		}
	}
	return nil
}

// repDirs lists a run directory's repetitions in order: rep1, rep2, ..., or the run
// directory itself for a single repetition.
func repDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("benchdata: %w", err)
	}
	type rep struct {
		n   int
		dir string
	}
	var reps []rep
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "rep")); e.IsDir() && err == nil && strings.HasPrefix(e.Name(), "rep") {
			reps = append(reps, rep{n, filepath.Join(dir, e.Name())})
		}
	}
	if len(reps) == 0 {
		return []string{dir}, nil
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].n < reps[j].n })
	out := make([]string, len(reps))
	for i, r := range reps {
		out[i] = r.dir
	}
	return out, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("benchdata: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("benchdata: %s: %w", path, err)
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Median is the middle of xs (the mean of the two middle values for an even count);
// NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return nan()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func nan() float64 { return math.NaN() }
