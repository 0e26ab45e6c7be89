// Package nightly runs the nightly benchmark suite: a YAML list of short experiments
// (a shipped default is embedded), each run through the runner into a directory of
// its own, then bench.json built from those run directories (package bench).
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
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/spec"
)

// DefaultSuite is the shipped suite's text.
//
//go:embed suite.yaml
var DefaultSuite []byte

// DefaultSuiteName is how errors name the shipped suite.
const DefaultSuiteName = "nightly/suite.yaml"

// Suite is a parsed suite file.
type Suite struct {
	Name    string
	File    string
	Text    []byte // as read, kept in the night's directory
	Entries []Entry
}

// Entry is one experiment of a suite.
type Entry struct {
	Name string         // directory name below the output, and the metrics' prefix
	Kind string         // how it runs: a key of kinds ("run")
	Spec string         // shipped spec name or file
	Set  []spec.Setting // overrides, in order
	Pos  string         // file:line of the entry
	// Resolved is the spec with the settings applied, checked when the suite is parsed.
	Resolved *spec.Spec
}

// Planned estimates how long the entry runs: each repetition's duration plus some
// setup, for the ETA.
func (e Entry) Planned() time.Duration {
	const setup = 8 * time.Second // cluster start, leader wait, verification
	reps := max(e.Resolved.Repetitions, 1)
	return time.Duration(reps) * (e.Resolved.Duration + setup)
}

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
// applied, so a bad value fails before anything runs. Errors name file:line and field.
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

func (p parser) entry(n *yaml.Node, path string) (Entry, error) {
	e := Entry{Kind: KindRun, Pos: fmt.Sprintf("%s:%d", p.file, n.Line)}
	setNode := map[int]*yaml.Node{}
	err := p.mapping(n, path, map[string]func(*yaml.Node, string) error{
		"name": p.str(&e.Name),
		"kind": p.str(&e.Kind),
		"spec": p.str(&e.Spec),
		"set": func(n *yaml.Node, path string) error {
			if n.Kind != yaml.SequenceNode {
				return p.errf(n, path, "expected a list of name=value overrides")
			}
			for i, item := range n.Content {
				if item.Kind != yaml.ScalarNode {
					return p.errf(item, fmt.Sprintf("%s[%d]", path, i), "expected name=value")
				}
				st, err := spec.ParseSetting(item.Value)
				if err != nil {
					return p.errf(item, fmt.Sprintf("%s[%d]", path, i), "%v", err)
				}
				setNode[len(e.Set)] = item
				e.Set = append(e.Set, st)
			}
			return nil
		},
	}, "name", "spec")
	if err != nil {
		return e, err
	}
	if !namePattern.MatchString(e.Name) {
		return e, p.errf(n, path+".name", "%q: use letters, digits, '.', '_' and '-' (it names a directory)", e.Name)
	}
	if _, ok := kinds[e.Kind]; !ok {
		return e, p.errf(n, path+".kind", "unknown kind %q (known: %s)", e.Kind, strings.Join(kindNames(), ", "))
	}
	// A spec file is looked up next to the suite first, then as given (or shipped).
	arg := e.Spec
	if local := filepath.Join(filepath.Dir(p.file), e.Spec); !filepath.IsAbs(e.Spec) && p.file != DefaultSuiteName && exists(local) {
		arg = local
	}
	base, err := spec.Resolve(arg)
	if err != nil {
		return e, p.errf(n, path+".spec", "%v", err)
	}
	// Settings are checked together, as the CLI does (crash-at=150s may need its
	// duration=200s); when they fail, a setting that is wrong in itself (an unknown
	// name, a value that does not parse: the error names it) has the blame and its line.
	e.Resolved, err = base.With(e.Set...)
	if err != nil {
		for i, st := range e.Set {
			if _, err := base.With(st); err != nil && (strings.Contains(err.Error(), "override "+st.String()+":") || strings.Contains(err.Error(), fmt.Sprintf("unknown override %q", st.Name))) {
				return e, p.errf(setNode[i], fmt.Sprintf("%s.set[%d]", path, i), "%v", err)
			}
		}
		return e, p.errf(n, path+".set", "%v", err)
	}
	return e, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
