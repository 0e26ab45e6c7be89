package spec

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Error is a problem in a spec, located by position ("file:line", or the override that
// set the value) and field path (e.g. "datacenters[1].servers").
type Error struct {
	Pos, Field, Msg string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Pos + ": " + e.Msg
	}
	return e.Pos + ": " + e.Field + ": " + e.Msg
}

// decoder walks yaml nodes, remembering where each field path was written so that
// later checks (and overrides) can point at the right line.
type decoder struct {
	file string
	pos  map[string]string
}

func (d *decoder) at(n *yaml.Node) string { return fmt.Sprintf("%s:%d", d.file, n.Line) }

func (d *decoder) errf(n *yaml.Node, field, format string, args ...any) error {
	return &Error{Pos: d.at(n), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// mark records where path was written; the first mark wins, so a key's line is kept
// over its value's (which can start on the next line).
func (d *decoder) mark(n *yaml.Node, path string) {
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = d.at(n)
	}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// field decodes the value of one mapping key.
type field func(n *yaml.Node, path string) error

// mapping decodes a mapping whose keys must all be in fields; keys in required must be
// present. Keys are decoded in file order.
func (d *decoder) mapping(n *yaml.Node, path string, fields map[string]field, required ...string) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "expected a mapping, got %s", kind(n))
	}
	d.mark(n, path)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := join(path, k.Value)
		fn, ok := fields[k.Value]
		if !ok {
			return d.errf(k, name, "unknown field (known: %s)", strings.Join(keys(fields), ", "))
		}
		if seen[k.Value] {
			return d.errf(k, name, "given twice")
		}
		seen[k.Value] = true
		d.mark(k, name)
		if err := fn(v, name); err != nil {
			return err
		}
	}
	for _, r := range required {
		if !seen[r] {
			return d.errf(n, join(path, r), "missing required field")
		}
	}
	return nil
}

// list decodes a sequence element by element.
func (d *decoder) list(n *yaml.Node, path string, each func(i int, n *yaml.Node, path string) error) error {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return d.errf(n, path, "expected a list, got %s", kind(n))
	}
	for i, e := range n.Content {
		p := index(path, i)
		d.mark(e, p)
		if err := each(i, e, p); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) scalar(n *yaml.Node, path string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		return "", d.errf(n, path, "expected a single value, got %s", kind(n))
	}
	return n.Value, nil
}

func (d *decoder) str(dst *string) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		*dst = v
		return err
	}
}

func (d *decoder) boolean(dst *bool) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		if err != nil {
			return err
		}
		switch v {
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			return d.errf(n, path, "%q is not true or false", v)
		}
		return nil
	}
}

func (d *decoder) float(dst *float64) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return d.errf(n, path, "%q is not a number", v)
		}
		*dst = f
		return nil
	}
}

func (d *decoder) integer(dst *int) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		if err != nil {
			return err
		}
		i, err := strconv.Atoi(v)
		if err != nil {
			return d.errf(n, path, "%q is not an integer", v)
		}
		*dst = i
		return nil
	}
}

func (d *decoder) uint64(dst *uint64) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		if err != nil {
			return err
		}
		u, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			return d.errf(n, path, "%q is not a non-negative integer", v)
		}
		*dst = u
		return nil
	}
}

func (d *decoder) duration(dst *time.Duration) field {
	return func(n *yaml.Node, path string) error {
		v, err := d.scalar(n, path)
		if err != nil {
			return err
		}
		t, err := time.ParseDuration(v)
		if err != nil {
			return d.errf(n, path, "%q is not a duration (like 60s or 1m30s)", v)
		}
		*dst = t
		return nil
	}
}

func (d *decoder) strs(dst *[]string) field { return listOf(d, dst, d.str) }

func (d *decoder) ints(dst *[]int) field { return listOf(d, dst, d.integer) }

// listOf decodes a list whose every element elem decodes.
func listOf[T any](d *decoder, dst *[]T, elem func(*T) field) field {
	return func(n *yaml.Node, path string) error {
		*dst = nil
		return d.list(n, path, func(_ int, e *yaml.Node, p string) error {
			var v T
			if err := elem(&v)(e, p); err != nil {
				return err
			}
			*dst = append(*dst, v)
			return nil
		})
	}
}

// resolve follows aliases so that YAML anchors work anywhere.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	default:
		return "nothing"
	}
}

func keys(m map[string]field) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
