package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestModelGolden compares `polebench model` output with testdata/*.golden; run
// `go test ./cmd/polebench -update` after an intended change and review the diff.
func TestModelGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"model-dep1.txt", []string{"model", "three-dc-dep1"}},
		{"model-dep1.json", []string{"model", "three-dc-dep1", "--json"}},
		{"model-two-dc.txt", []string{"model", "two-dc"}},
		{"model-two-dc.json", []string{"model", "--json", "two-dc"}},
		// Fig. 7b, Dep. 3 with every request in D2; flags on both sides of SPEC.
		{"model-dep3-p1.txt", []string{"model", "--p", "1", "experiments/three-dc-dep3.yaml", "--oracle", "latency"}},
		// The jitter-aware term beside the plain model (a fixed seed: repeatable).
		{"model-dep3-p1-jitter.txt", []string{"model", "three-dc-dep3", "--p", "1", "--oracle", "consensus", "--jitter-aware"}},
		// What each backend and flavor declares (package cluster/backend's registry).
		{"help-backends.txt", []string{"help", "backends"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errs := runCLI(tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			path := filepath.Join("testdata", tc.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if out != string(want) {
				t.Errorf("output differs from %s:\n%s", path, out)
			}
		})
	}
}

// TestModelJSONShape pins the JSON keys other tools read.
func TestModelJSONShape(t *testing.T) {
	code, out, errs := runCLI("model", "three-dc-dep1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(top); !slices.Equal(got, []string{"before", "elected", "servers", "ties"}) {
		t.Errorf("top-level keys %v", got)
	}
	var m struct {
		Servers []map[string]json.RawMessage
		Elected map[string]int
		Ties    map[string][]int
		Before  map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	serverKeys := []string{"dc", "id", "latency_ms_by_dc", "mean_latency_ms", "theta_c_ms", "theta_l_ms", "theta_r", "theta_w_ms", "worst_latency_ms"}
	if len(m.Servers) != 4 {
		t.Fatalf("%d servers, want p1..p4", len(m.Servers))
	}
	for _, s := range append(m.Servers, m.Before) {
		if got := sortedKeys(s); !slices.Equal(got, serverKeys) {
			t.Errorf("server keys %v", got)
		}
	}
	if m.Elected["history"] != 4 || m.Elected["rotating"] != 1 || m.Elected["worst-case"] != 3 || len(m.Elected) != 6 {
		t.Errorf("elected %v", m.Elected)
	}
	if !slices.Equal(m.Ties["worst-case"], []int{2, 3}) || m.Ties["rotating"] != nil {
		t.Errorf("ties %v", m.Ties)
	}
	if string(m.Before["id"]) != "5" {
		t.Errorf("before %v", m.Before)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestCLIErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nrepeats: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{nil, 2, "", "Usage:"},
		{[]string{"fly"}, 2, "", `unknown command "fly"`},
		{[]string{"model"}, 2, "", "Usage: polebench model SPEC"},
		{[]string{"model", "two-dc", "three-dc-dep1"}, 2, "", "Usage: polebench model SPEC"},
		{[]string{"model", "two-dc", "--p", "2"}, 1, "", "polebench model: override p=2: rates.skew.p: p = 2 is outside [0, 1]"},
		{[]string{"model", "two-dc", "--bogus"}, 2, "", "flag provided but not defined: -bogus\nUsage: polebench model"},
		{[]string{"model", bad}, 1, "", bad + ":2: repeats: unknown field"},
		{[]string{"model", "nope"}, 1, "", "nope is neither a file nor a shipped spec"},
		{[]string{"run", "two-dc", "--jobs", "-1"}, 2, "", `invalid value "-1" for flag -jobs: want a whole number of runs, 0 or more`},
		{[]string{"reproduce", "--jobs", "two"}, 2, "", `invalid value "two" for flag -jobs`},
		{[]string{"run", "two-dc", "--workers", "-2"}, 2, "", `invalid value "-2" for flag -workers: want a whole number of goroutines, 0 or more`},
		{[]string{"version"}, 0, "polebench dev", ""},
		{[]string{"help"}, 0, "polebench model", ""},
		{[]string{"--help"}, 0, "polebench version", ""},
		{[]string{"help", "model"}, 0, "-oracle", ""},
		{[]string{"help", "fly"}, 2, "", `unknown command "fly"`},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
			t.Errorf("polebench %v: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout ~ %q, stderr ~ %q",
				tc.args, code, out, errs, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestSimCheckCLI: `polebench sim check` runs its seeds on every core and reports
// them all, and refuses a schedule it cannot draw.
func TestSimCheckCLI(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("sim", "check", "--seeds", "5", "--from", "11", "--duration", "5s", "--out", out)
	if code != 0 || !regexp.MustCompile(`sim check two-dc: 5 seeds from 11 in \S+ on \d+ cores: 0 unsafe .*, 0 did not converge \[\]`).MatchString(stdout) {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("safe seeds left run directories: %v", ents)
	}
	for _, tc := range []struct{ args, stderr string }{
		{"--seeds 0", "--seeds 0: want at least 1"},
		{"--duration 4s", "--duration 4s: random schedules need at least 5s"},
	} {
		args := append([]string{"sim", "check"}, strings.Fields(tc.args)...)
		if code, _, errs := runCLI(args...); code != 1 || !strings.Contains(errs, tc.stderr) {
			t.Errorf("polebench %v: exit %d, stderr %q; want 1, ~%q", args, code, errs, tc.stderr)
		}
	}
}
