package backend

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/polebench/polebench/nemesis"
)

// This binary links no backend: the tests register their own, once, as a program's
// packages do from their init.
func init() {
	RegisterFlavor(Flavor{Name: DefaultFlavor, Preload: true,
		Carries: Carries{Faults: nemesis.Kinds(), Links: Links{Schedules: true}}})
	// A flavor may register before the backends it runs on.
	RegisterFlavor(Flavor{Name: "fake-flavor", On: []string{"fake-kernel", "fake-unknown"},
		Carries: Carries{Faults: []nemesis.Kind{nemesis.Kill, nemesis.Restart, nemesis.Pause, nemesis.Resume},
			LeaderTransfer: true, Why: map[string]string{"faults": "it has no admin port"}}})
	Register(Backend{Name: "fake-kernel", Rank: 2, Carries: Carries{Faults: AllBut(nemesis.Pause, nemesis.Resume),
		Links: Links{Kernel: true, UserSpace: true, Schedules: true}, Why: map[string]string{"pause": "no pids"}}})
	Register(Backend{Name: "fake-sim", Rank: 9, Carries: Carries{Faults: nemesis.Kinds(), Simulated: true}})
	Register(Backend{Name: "fake-b", Rank: 2})
}

// Names by rank, then by name; flavors the default first; which backend runs which.
func TestRegistryTables(t *testing.T) {
	if got, want := Names(), []string{"fake-b", "fake-kernel", "fake-sim"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got, want := Flavors(), []string{DefaultFlavor, "fake-flavor"}; !slices.Equal(got, want) {
		t.Errorf("Flavors() = %v, want %v", got, want)
	}
	// A backend the flavor names but that never registered is not listed.
	if got, want := For("fake-flavor"), []string{"fake-kernel"}; !slices.Equal(got, want) {
		t.Errorf("For(fake-flavor) = %v, want %v", got, want)
	}
	if got := For(""); !slices.Equal(got, Names()) {
		t.Errorf("For(default) = %v: every backend runs the default flavor", got)
	}
	for _, c := range []struct {
		name, flavor string
		runs         bool
	}{
		{"fake-b", "", true}, {"fake-b", "fake-flavor", false}, {"fake-kernel", "fake-flavor", true},
		{"fake-unknown", "fake-flavor", false}, {"fake-b", "other", false}, {"", "", false}, // no default backend here
	} {
		if got := Runs(c.name, c.flavor); got != c.runs {
			t.Errorf("Runs(%q, %q) = %v, want %v", c.name, c.flavor, got, c.runs)
		}
	}
	if !Simulated("fake-sim") || Simulated("fake-kernel") || Simulated("nothing") {
		t.Error("Simulated should hold for fake-sim alone")
	}
}

// A run carries what both its backend and its flavor do, and is refused with the
// reason of whichever lacks it, the flavor's first.
func TestCarriedAndRefuses(t *testing.T) {
	c := Carried("fake-kernel", "fake-flavor")
	if want := []nemesis.Kind{nemesis.Kill, nemesis.Restart}; !slices.Equal(c.Faults, want) {
		t.Errorf("faults %v, want %v", c.Faults, want)
	}
	if c.Links.Schedules || !c.Links.Kernel || !c.LeaderTransfer {
		t.Errorf("links %+v, leader transfer %v: want the backend's kernel, no schedules (the flavor has none), the flavor's transfer", c.Links, c.LeaderTransfer)
	}
	for _, tc := range []struct {
		name, flavor string
		k            nemesis.Kind
		want         string
	}{
		{"fake-kernel", "", nemesis.TornTail, ""},
		{"fake-kernel", "", nemesis.Pause, "pause: this cluster cannot do it: the fake-kernel backend: no pids"},
		{"fake-kernel", "fake-flavor", nemesis.Pause, "pause: this cluster cannot do it: the fake-kernel backend: no pids"},
		{"fake-kernel", "fake-flavor", nemesis.Partition, "partition: this cluster cannot do it: flavor fake-flavor: it has no admin port"},
		{"fake-b", "", nemesis.Kill, "kill: this cluster cannot do it: the fake-b backend: it does not declare it (docs/backends.md)"},
	} {
		err := Refuses(tc.name, tc.flavor, tc.k)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Refuses(%s, %s, %s): %v", tc.name, tc.flavor, tc.k, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || !errors.As(err, new(nemesis.Unsupported)) {
			t.Errorf("Refuses(%s, %s, %s) = %v, want %q (a nemesis.Unsupported)", tc.name, tc.flavor, tc.k, err, tc.want)
		}
	}
}

// Registering a name twice, a nameless entry or a flavor on no backend is a
// programming error.
func TestRegisterPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"a backend twice":        func() { Register(Backend{Name: "fake-b"}) },
		"a nameless backend":     func() { Register(Backend{}) },
		"a flavor twice":         func() { RegisterFlavor(Flavor{Name: "fake-flavor", On: []string{"x"}}) },
		"a nameless flavor":      func() { RegisterFlavor(Flavor{On: []string{"x"}}) },
		"a flavor on no backend": func() { RegisterFlavor(Flavor{Name: "fake-nowhere"}) },
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

func TestList(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "a b": "a and b", "a b c": "a, b and c"} {
		if got := List(strings.Fields(in)); got != want {
			t.Errorf("List(%q) = %q, want %q", in, got, want)
		}
	}
}
