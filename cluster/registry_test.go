package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polebench/polebench/cluster/backend"
)

// fake is a cluster that a fake backend's constructor returns: it records the options
// it was started with.
type fake struct {
	Cluster
	backend string
	opts    Options
}

func fakeNew(name string) Constructor {
	return func(_ context.Context, opts Options) (Cluster, error) { return &fake{backend: name, opts: opts}, nil }
}

// The registry tests register fake backends, once per test binary: the registry is
// the process's, as in a program.
func init() {
	// The flavor first: a flavor may register before the backends it runs on (package
	// init order is not the import order).
	RegisterFlavor(Flavor{Name: "fake-flavor", On: map[string]Constructor{"fake-b": fakeNew("fake-b/fake-flavor")},
		Down:  func(context.Context, string) ([]string, error) { return []string{"flavor leftover"}, nil },
		Check: func(context.Context) error { return errors.New("fake-flavor cannot run here") }})
	Register(Backend{Name: "fake-b", Rank: 2, New: fakeNew("fake-b"),
		Down: func(_ context.Context, label string) ([]string, error) {
			return []string{"b " + label}, errors.New("b failed")
		}})
	Register(Backend{Name: "fake-a", Rank: 1, New: fakeNew("fake-a"),
		Down:  func(_ context.Context, label string) ([]string, error) { return []string{"a " + label}, nil },
		Check: func(context.Context) error { return errors.New("fake-a needs something") }})
	Register(Backend{Name: "fake-c", Rank: 2, New: fakeNew("fake-c")}) // same rank as fake-b: by name
}

// The registrations make the backends' names, order and flavors (package backend)
// and what New starts.
func TestRegistryNames(t *testing.T) {
	// This binary links no real backend, nor the simulator (package sim registers it).
	if want := []string{"fake-a", "fake-b", "fake-c"}; !slices.Equal(backend.Names(), want) || !slices.Equal(Backends(), want) {
		t.Errorf("names %v (cluster: %v), want %v: by rank, then by name", backend.Names(), Backends(), want)
	}
	if got := backend.For("fake-flavor"); !slices.Equal(got, []string{"fake-b"}) {
		t.Errorf("backends of fake-flavor: %v, want [fake-b]", got)
	}
	if !backend.Runs("fake-c", "") || backend.Runs("fake-c", "fake-flavor") {
		t.Error("fake-c should run poled only")
	}
}

func TestRegistryNew(t *testing.T) {
	for _, c := range []struct{ name, flavor, want string }{
		{"fake-a", "", "fake-a"},
		{"fake-b", Poled, "fake-b"},
		{"fake-b", "fake-flavor", "fake-b/fake-flavor"},
	} {
		cl, err := New(context.Background(), c.name, Options{Flavor: c.flavor, DataRoot: "rel"})
		if err != nil {
			t.Fatalf("New(%s, %s): %v", c.name, c.flavor, err)
		}
		f := cl.(*fake)
		if f.backend != c.want {
			t.Errorf("New(%s, %s) started %s", c.name, c.flavor, f.backend)
		}
		if !filepath.IsAbs(f.opts.DataRoot) || filepath.Base(f.opts.DataRoot) != "rel" {
			t.Errorf("New(%s, %s): data root %q, want it absolute", c.name, c.flavor, f.opts.DataRoot)
		}
	}
	for _, c := range []struct{ name, flavor, want string }{
		{"", "", `unknown backend "local" (known: [fake-a fake-b fake-c])`}, // this binary links no local backend
		{"fake-a", "fake-flavor", `flavor fake-flavor does not run on backend "fake-a": only on fake-b`},
		{"fake-a", "other", `unknown flavor "other"`},
	} {
		if _, err := New(context.Background(), c.name, Options{Flavor: c.flavor}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q, %q): %v, want an error containing %q", c.name, c.flavor, err, c.want)
		}
	}
}

// Down asks every backend by rank, then every flavor, goes on past an error and names
// whose it is.
func TestRegistryDown(t *testing.T) {
	removed, err := Down(context.Background(), "L")
	if want := []string{"a L", "b L", "flavor leftover"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if err == nil || err.Error() != "fake-b: b failed" {
		t.Errorf("error %v, want fake-b's", err)
	}
}

// Check asks the flavor, then the backend.
func TestRegistryCheck(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ name, flavor, want string }{
		{"fake-a", "", "fake-a needs something"},
		{"fake-b", "fake-flavor", "fake-flavor cannot run here"},
		{"fake-c", "fake-flavor", `flavor fake-flavor does not run on backend "fake-c": only on fake-b`},
		{"fake-c", "", ""},
		{"fake-b", "", ""},
	} {
		err := Check(ctx, c.name, c.flavor)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%s, %s): %v, want %q", c.name, c.flavor, err, c.want)
		}
	}
}

// Registering a name twice, or a backend without a constructor, is a programming error.
func TestRegistryPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"a backend twice":       func() { Register(Backend{Name: "fake-a", New: fakeNew("x")}) },
		"no constructor":        func() { Register(Backend{Name: "fake-d"}) },
		"a flavor twice":        func() { RegisterFlavor(Flavor{Name: "fake-flavor"}) },
		"poled as a flavor":     func() { RegisterFlavor(Flavor{Name: Poled}) },
		"a flavor on nothing":   func() { RegisterFlavor(Flavor{Name: "fake-nowhere"}) },
		"a nameless backend":    func() { Register(Backend{New: fakeNew("x")}) },
		"a leaf name twice too": func() { backend.Register(backend.Backend{Name: "fake-c"}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
