package nightly

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultSuite(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Entries) != 3 {
		t.Fatalf("%d entries", len(s.Entries))
	}
	var total time.Duration
	for _, e := range s.Entries {
		if e.Resolved.Repetitions != 5 || e.Resolved.Duration != 30*time.Second || e.Resolved.CrashAt != 15*time.Second {
			t.Errorf("%s: %d × %v, crash at %v", e.Name, e.Resolved.Repetitions, e.Resolved.Duration, e.Resolved.CrashAt)
		}
		total += e.Planned()
	}
	// `make nightly` must finish in under 20 minutes.
	if total > 15*time.Minute {
		t.Errorf("the default suite plans %v", total)
	}
	e := s.Entries[1]
	if e.Resolved.Oracle.Name != "latency" || e.Resolved.Rates.Skew == nil || *e.Resolved.Rates.Skew.P != 1 {
		t.Errorf("fig7b entry: oracle %s, skew %+v", e.Resolved.Oracle.Name, e.Resolved.Rates.Skew)
	}
	if r := s.Entries[2].Resolved; r.PreloadMB != 20 || len(r.Outdate) != 1 {
		t.Errorf("recovery entry: preload %d, outdate %+v", r.PreloadMB, r.Outdate)
	}
}

func TestBadSuites(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "bad.yaml: empty suite"},
		{"not yaml", "name: [", "bad.yaml: yaml: line 1"},
		{"no experiments", "name: x\n", "bad.yaml:1: experiments: missing"},
		{"unknown top field", "name: x\nexperiment: []\n", "bad.yaml:2: experiment: unknown field (known: experiments, name)"},
		{"unknown entry field", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    sets: []\n", "bad.yaml:5: experiments[0].sets: unknown field"},
		{"no spec", "name: x\nexperiments:\n  - name: a\n", "bad.yaml:3: experiments[0].spec: missing"},
		{"unknown spec", "name: x\nexperiments:\n  - name: a\n    spec: four-dc\n", "bad.yaml:3: experiments[0].spec: four-dc is neither a file nor a shipped spec"},
		{"unknown kind", "name: x\nexperiments:\n  - name: a\n    kind: sim\n    spec: two-dc\n", `bad.yaml:3: experiments[0].kind: unknown kind "sim" (known: run)`},
		{"bad name", "name: x\nexperiments:\n  - name: a/b\n    spec: two-dc\n", `bad.yaml:3: experiments[0].name: "a/b"`},
		{"twice", "name: x\nexperiments:\n  - {name: a, spec: two-dc}\n  - {name: a, spec: two-dc}\n", `bad.yaml:4: experiments[1].name: "a" is also the name of the entry at bad.yaml:3`},
		{"not name=value", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set: [duration]\n", `bad.yaml:5: experiments[0].set[0]: override "duration": want name=value`},
		{"unknown override", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set:\n      - duration=30s\n      - bogus=23\n", `bad.yaml:7: experiments[0].set[1]: unknown override "bogus"`},
		{"bad value", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set:\n      - duration=30\n", `bad.yaml:6: experiments[0].set[0]: override duration=30: duration: "30" is not a duration`},
		// Each setting is fine alone, together the crash falls after the end.
		{"across fields", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set: [duration=30s]\n", "bad.yaml:3: experiments[0].set: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestSuiteSpecNextToIt resolves a spec file relative to the suite's directory.
func TestSuiteSpecNextToIt(t *testing.T) {
	dir := t.TempDir()
	text, err := os.ReadFile("../experiments/two-dc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(strings.Replace(string(text), "name: two-dc", "name: mine", 1)), 0o644)
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte("name: x\nexperiments:\n  - {name: a, spec: mine.yaml, set: [repetitions=2]}\n"), 0o644)
	s, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries[0].Resolved.Name != "mine" || s.Entries[0].Resolved.Repetitions != 2 {
		t.Errorf("resolved %s × %d", s.Entries[0].Resolved.Name, s.Entries[0].Resolved.Repetitions)
	}
}
