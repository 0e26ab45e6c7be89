package spec

import (
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/polebench/polebench/experiments"
)

// ShippedNames lists the shipped specs by name (file name without .yaml).
func ShippedNames() []string {
	entries, _ := fs.ReadDir(experiments.FS, ".")
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Shipped returns the text of a shipped spec, by name ("two-dc") or file name
// ("two-dc.yaml").
func Shipped(name string) ([]byte, error) {
	file := strings.TrimSuffix(name, ".yaml") + ".yaml"
	data, err := experiments.FS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("no shipped spec %q (shipped: %s)", name, strings.Join(ShippedNames(), ", "))
	}
	return data, nil
}

// Resolve loads a spec given as a path or, when no such file exists, as the name of a
// shipped spec (then it is reported as experiments/NAME.yaml).
func Resolve(arg string) (*Spec, error) {
	if _, err := os.Stat(arg); err == nil {
		return Load(arg)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(arg, "experiments/"), ".yaml")
	data, err := Shipped(name)
	if err != nil {
		return nil, fmt.Errorf("%s is neither a file nor a shipped spec: %w", arg, err)
	}
	return Parse("experiments/"+name+".yaml", data)
}
