package spec

import (
	"os"
	"testing"
)

// FuzzParse: any input gives a spec or an error, never a panic, and a spec that
// parses has a topology and a model.
func FuzzParse(f *testing.F) {
	for _, name := range append(ShippedNames(), "testdata/full") {
		data, err := Shipped(name)
		if err != nil {
			data, err = os.ReadFile(name + ".yaml")
		}
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("oracle: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if _, err := s.Topology(); err != nil {
			t.Fatalf("a checked spec has no topology: %v", err)
		}
		if _, err := s.With(Setting{"p", "0.5"}); err != nil && s.Rates.Skew != nil {
			t.Fatalf("--p on a skewed spec: %v", err)
		}
		_, _ = s.Model() // may fail (no quorum after the crash), must not panic
	})
}
