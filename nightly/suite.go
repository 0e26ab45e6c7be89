// Package nightly runs the nightly benchmark suite: a YAML list of entries (a shipped
// default is embedded), each a short experiment run through the runner or a write
// benchmark of poled against ZooKeeper, into a directory of its own; then bench.json
// built from those directories (package benchdata), with each entry's fidelity verdict
// against the goal the suite gives it.
package nightly

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/bench"
	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/spec"
)

// DefaultSuite is the shipped suite's text.
//
//go:embed suite.yaml
var DefaultSuite []byte

// DefaultSuiteName is how errors name the shipped suite.
const DefaultSuiteName = "nightly/suite.yaml"

// Suite is a parsed suite file, or the selection of it that runs (Select).
type Suite struct {
	Name    string
	File    string
	Text    []byte // as read, kept in the night's directory
	Entries []Entry
	// Quick says Select picked the --quick set; Planted are the overrides Select
	// applied to every run entry (nightly --set).
	Quick   bool
	Planted []spec.Setting
}

// Entry is one experiment of a suite.
type Entry struct {
	Name string         // directory name below the output, and the metrics' prefix
	Kind string         // how it runs: a key of kinds (KindRun, KindBench, KindSimSpeed, ...)
	Spec string         // KindRun, KindSimSpeed: shipped spec name or file
	Set  []spec.Setting // settings, in order: the spec's overrides, or the benchmark's
	// InQuick puts the entry in the --quick set, with Quick applied after Set.
	InQuick bool
	Quick   []spec.Setting
	Goal    benchdata.Goal
	Pos     string // file:line of the entry
	// Base is a run entry's spec as named, before any setting.
	Base *spec.Spec
	// Resolved is a run entry's spec with its settings applied, checked when the
	// suite is parsed.
	Resolved *spec.Spec
	// Written is a planted night's run entry's spec as the suite wrote it, without the
	// planted settings: the night's runs are judged by its model.
	Written *spec.Spec
	// Load is a bench entry's write benchmark, checked when the suite is parsed.
	Load *bench.Config
	// Workers are the worker counts a sim-speed entry simulates each repetition at.
	Workers []int
	// Kazoo is a kazoo entry's run of kazoo's suite.
	Kazoo *Kazoo
}

// Planned estimates how long the entry runs, for the ETA and the suite's budget.
func (e Entry) Planned() time.Duration { return kinds[e.Kind].planned(e) }

// Where says where the entry runs: the backend, and the flavor when not poled.
func (e Entry) Where() string { return kinds[e.Kind].where(e) }

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Load reads the suite at path; "" is the shipped default.
func Load(path string) (*Suite, error) {
	if path == "" {
		return Parse(DefaultSuiteName, DefaultSuite)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nightly: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks a suite: every entry's spec is resolved and its settings
// applied, the --quick ones too, and its goal checked against its kind, so a bad value
// fails before anything runs. Errors name file:line and field.
func Parse(file string, data []byte) (*Suite, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty suite", file)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	p := parser{file: file}
	s := &Suite{File: file, Text: data}
	err := p.mapping(root, "", map[string]func(*yaml.Node, string) error{
		"name": p.str(&s.Name),
		"experiments": func(n *yaml.Node, path string) error {
			if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
				return p.errf(n, path, "expected a non-empty list of experiments")
			}
			seen := map[string]string{}
			for i, item := range n.Content {
				ip := fmt.Sprintf("%s[%d]", path, i)
				e, err := p.entry(item, ip)
				if err != nil {
					return err
				}
				if prev, dup := seen[e.Name]; dup {
					return p.errf(item, ip+".name", "%q is also the name of the entry at %s", e.Name, prev)
				}
				seen[e.Name] = e.Pos
				s.Entries = append(s.Entries, e)
			}
			return nil
		},
	}, "name", "experiments")
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Select returns the suite as it runs: with quick, only the entries tagged quick, their
// quick settings applied after their own; then the planted settings applied to every
// run entry (the spec's overrides, as `polebench run` takes them). Errors name the
// --set flag and the entry.
func (s *Suite) Select(quick bool, planted []spec.Setting) (*Suite, error) {
	out := *s
	out.Entries, out.Quick, out.Planted = nil, quick, planted
	var known []string
	for _, o := range spec.Overrides() {
		known = append(known, o.Name)
	}
	for _, st := range planted {
		if !slices.Contains(known, st.Name) {
			return nil, fmt.Errorf("--set %s: unknown override %q (known: %s)", st, st.Name, strings.Join(known, ", "))
		}
	}
	for _, e := range s.Entries {
		if quick && !e.InQuick {
			continue
		}
		sets := e.Set
		if quick {
			sets = append(append([]spec.Setting(nil), e.Set...), e.Quick...)
		}
		if e.Kind == KindRun && len(planted) > 0 {
			if _, err := kinds[e.Kind].apply(&e, sets); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", e.Pos, e.Name, err) // checked when parsed: not reached
			}
			e.Written = e.Resolved
			sets = append(append([]spec.Setting(nil), sets...), planted...)
		}
		if _, err := kinds[e.Kind].apply(&e, sets); err != nil {
			if len(planted) > 0 && e.Kind == KindRun {
				return nil, fmt.Errorf("--set %s: entry %s (%s): %w", settingsString(planted), e.Name, e.Pos, err)
			}
			return nil, fmt.Errorf("%s: %s: %w", e.Pos, e.Name, err) // checked when parsed: not reached
		}
		out.Entries = append(out.Entries, e)
	}
	if len(out.Entries) == 0 {
		return nil, fmt.Errorf("%s: no entry has quick: (the --quick set is empty)", s.File)
	}
	return &out, nil
}

func settingsString(sts []spec.Setting) string {
	parts := make([]string, len(sts))
	for i, st := range sts {
		parts[i] = st.String()
	}
	return strings.Join(parts, " --set ")
}

// Planned is the sum of the entries' planned times.
func (s *Suite) Planned() time.Duration {
	var total time.Duration
	for _, e := range s.Entries {
		total += e.Planned()
	}
	return total
}

type parser struct{ file string }

func (p parser) errf(n *yaml.Node, field, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if field != "" {
		msg = field + ": " + msg
	}
	return fmt.Errorf("%s:%d: %s", p.file, n.Line, msg)
}

// mapping decodes a YAML mapping with the given fields; unknown and missing keys are
// errors.
func (p parser) mapping(n *yaml.Node, path string, fields map[string]func(*yaml.Node, string) error, required ...string) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, path, "expected a mapping")
	}
	got := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fp := k.Value
		if path != "" {
			fp = path + "." + k.Value
		}
		f, ok := fields[k.Value]
		if !ok {
			var known []string
			for name := range fields {
				known = append(known, name)
			}
			return p.errf(k, fp, "unknown field (known: %s)", strings.Join(sorted(known), ", "))
		}
		if got[k.Value] {
			return p.errf(k, fp, "given twice")
		}
		got[k.Value] = true
		if err := f(v, fp); err != nil {
			return err
		}
	}
	for _, r := range required {
		if !got[r] {
			fp := r
			if path != "" {
				fp = path + "." + r
			}
			return p.errf(n, fp, "missing")
		}
	}
	return nil
}

func (p parser) str(dst *string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return p.errf(n, path, "expected a non-empty string")
		}
		*dst = n.Value
		return nil
	}
}

// located is a setting and where the suite gives it.
type located struct {
	node  *yaml.Node
	field string
}

// settings decodes a list of name=value strings.
func (p parser) settings(n *yaml.Node, path string, dst *[]spec.Setting, at *[]located) error {
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, path, "expected a list of name=value settings")
	}
	for i, item := range n.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if item.Kind != yaml.ScalarNode {
			return p.errf(item, ip, "expected name=value")
		}
		st, err := spec.ParseSetting(item.Value)
		if err != nil {
			return p.errf(item, ip, "%v", err)
		}
		*dst = append(*dst, st)
		*at = append(*at, located{item, ip})
	}
	return nil
}

func (p parser) entry(n *yaml.Node, path string) (Entry, error) {
	e := Entry{Kind: KindRun, Pos: fmt.Sprintf("%s:%d", p.file, n.Line)}
	var setAt, quickAt []located
	var specNode, quickNode, goalNode *yaml.Node
	err := p.mapping(n, path, map[string]func(*yaml.Node, string) error{
		"name": p.str(&e.Name),
		"kind": p.str(&e.Kind),
		"spec": func(v *yaml.Node, fp string) error { specNode = v; return p.str(&e.Spec)(v, fp) },
		"set":  func(v *yaml.Node, fp string) error { return p.settings(v, fp, &e.Set, &setAt) },
		// quick: true (in the --quick set as is), false (not in it, as when absent), or
		// a list of settings applied after set in the --quick set.
		"quick": func(v *yaml.Node, fp string) error {
			quickNode = v
			if v.Kind == yaml.ScalarNode {
				b, err := strconv.ParseBool(v.Value)
				if err != nil || v.Tag != "!!bool" {
					return p.errf(v, fp, "expected true, false or a list of name=value settings")
				}
				e.InQuick = b
				return nil
			}
			e.InQuick = true
			return p.settings(v, fp, &e.Quick, &quickAt)
		},
		"goal": func(v *yaml.Node, _ string) error { goalNode = v; return nil },
	}, "name")
	if err != nil {
		return e, err
	}
	if !namePattern.MatchString(e.Name) {
		return e, p.errf(n, path+".name", "%q: use letters, digits, '.', '_' and '-' (it names a directory)", e.Name)
	}
	k, ok := kinds[e.Kind]
	if !ok {
		return e, p.errf(n, path+".kind", "unknown kind %q (known: %s)", e.Kind, strings.Join(kindNames(), ", "))
	}
	switch {
	case k.usesSpec && specNode == nil:
		return e, p.errf(n, path+".spec", "missing")
	case !k.usesSpec && specNode != nil:
		return e, p.errf(specNode, path+".spec", "kind %s takes no spec (its settings say what it runs)", e.Kind)
	}
	if k.usesSpec {
		// A spec file is looked up next to the suite first, then as given (or shipped).
		arg := e.Spec
		if local := filepath.Join(filepath.Dir(p.file), e.Spec); !filepath.IsAbs(e.Spec) && p.file != DefaultSuiteName && exists(local) {
			arg = local
		}
		if e.Base, err = spec.Resolve(arg); err != nil {
			return e, p.errf(n, path+".spec", "%v", err)
		}
	}
	// The settings are checked together, as the CLI does (crash-at=150s may need its
	// duration=200s); when they fail, a setting that is wrong in itself (an unknown
	// name, a value that does not parse) has the blame and its line. The quick
	// settings are checked after set, as the --quick night applies them.
	if err := p.apply(&e, e.Set, setAt, n, path+".set"); err != nil {
		return e, err
	}
	if goalNode != nil {
		if e.Goal, err = p.goal(e, goalNode, path+".goal"); err != nil {
			return e, err
		}
	}
	if e.InQuick {
		q := e
		if err := p.apply(&q, append(append([]spec.Setting(nil), e.Set...), e.Quick...), append(append([]located(nil), setAt...), quickAt...), quickNode, path+".quick"); err != nil {
			return e, err
		}
		if goalNode != nil && k.checkGoal != nil {
			if err := k.checkGoal(q, e.Goal); err != nil {
				return e, p.errf(goalNode, path+".goal", "%v (with the quick settings)", err)
			}
		}
	}
	return e, nil
}

// apply resolves e with sets (located by at), blaming a setting's line when it alone
// is wrong, else the field.
func (p parser) apply(e *Entry, sets []spec.Setting, at []located, n *yaml.Node, field string) error {
	blame, err := kinds[e.Kind].apply(e, sets)
	if err == nil {
		return nil
	}
	if blame >= 0 && blame < len(at) {
		return p.errf(at[blame].node, at[blame].field, "%v", err)
	}
	return p.errf(n, field, "%v", err)
}

// goal decodes an entry's goal and checks it against the entry's kind and settings.
func (p parser) goal(e Entry, n *yaml.Node, path string) (benchdata.Goal, error) {
	var g benchdata.Goal
	k := kinds[e.Kind]
	if len(k.goals) == 0 {
		return g, p.errf(n, path, "kind %s takes no goal: compare judges its numbers against earlier nights", e.Kind)
	}
	num := func(v *yaml.Node, fp string) (float64, error) {
		if v.Kind != yaml.ScalarNode {
			return 0, p.errf(v, fp, "expected a number")
		}
		f, err := strconv.ParseFloat(v.Value, 64)
		if err != nil {
			return 0, p.errf(v, fp, "%q is not a number", v.Value)
		}
		return f, nil
	}
	// positive sets *dst to a number above 0 (what names what it is, in the error).
	positive := func(dst **float64, what string) func(*yaml.Node, string) error {
		return func(v *yaml.Node, fp string) error {
			x, err := num(v, fp)
			if err != nil {
				return err
			}
			if x <= 0 {
				return p.errf(v, fp, "%g: %s above 0", x, what)
			}
			*dst = &x
			return nil
		}
	}
	fields := map[string]func(*yaml.Node, string) error{
		// A number X is [-X, +X]; a mapping gives min and max.
		"measured_minus_model_ms": func(v *yaml.Node, fp string) error {
			var r benchdata.Range
			if v.Kind == yaml.MappingNode {
				err := p.mapping(v, fp, map[string]func(*yaml.Node, string) error{
					"min": func(v *yaml.Node, fp string) (err error) { r.Min, err = num(v, fp); return err },
					"max": func(v *yaml.Node, fp string) (err error) { r.Max, err = num(v, fp); return err },
				}, "min", "max")
				if err != nil {
					return err
				}
				if r.Min > r.Max {
					return p.errf(v, fp, "min %g is above max %g", r.Min, r.Max)
				}
			} else {
				x, err := num(v, fp)
				if err != nil {
					return err
				}
				if x < 0 {
					return p.errf(v, fp, "%g: a tolerance is not negative", x)
				}
				r = benchdata.Range{Min: -x, Max: x}
			}
			g.MeasuredMinusModelMS = &r
			return nil
		},
		"throughput_ratio_min": positive(&g.ThroughputRatioMin, "a ratio"),
		"rtt_error_pct_max":    positive(&g.RTTErrorPctMax, "a percentage"),
		"no_trend": func(v *yaml.Node, fp string) error {
			b, err := strconv.ParseBool(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || v.Tag != "!!bool" {
				return p.errf(v, fp, "expected true or false")
			}
			g.NoTrend = b
			return nil
		},
	}
	for name := range fields {
		if !k.goals[name] {
			fields[name] = func(v *yaml.Node, fp string) error {
				return p.errf(v, fp, "not a goal of kind %s (its goals: %s)", e.Kind, strings.Join(sorted(keys(k.goals)), ", "))
			}
		}
	}
	if err := p.mapping(n, path, fields); err != nil {
		return g, err
	}
	if g.IsZero() {
		return g, p.errf(n, path, "an empty goal (give one of: %s, or leave goal out)", strings.Join(sorted(keys(k.goals)), ", "))
	}
	if k.checkGoal != nil {
		if err := k.checkGoal(e, g); err != nil {
			return g, p.errf(n, path, "%v", err)
		}
	}
	return g, nil
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
