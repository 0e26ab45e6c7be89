package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestNightlyWorkflow parses .github/workflows/nightly.yml and checks that it runs on
// a schedule and on demand, and that every make target it calls exists in the Makefile.
func TestNightlyWorkflow(t *testing.T) {
	data, err := os.ReadFile("../../.github/workflows/nightly.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Name string
				Uses string
				Run  string
			}
		}
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("nightly.yml: %v", err)
	}
	if _, ok := wf.On["schedule"]; !ok {
		t.Error("no schedule trigger")
	}
	if _, ok := wf.On["workflow_dispatch"]; !ok {
		t.Error("no workflow_dispatch trigger")
	}
	targets := makeTargets(t)
	makeCall := regexp.MustCompile(`\bmake\s+([A-Za-z0-9_.-]+)`)
	var called []string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			for _, m := range makeCall.FindAllStringSubmatch(st.Run, -1) {
				called = append(called, m[1])
				if !targets[m[1]] {
					t.Errorf("step %q calls make %s, which the Makefile does not define", st.Name, m[1])
				}
			}
		}
	}
	for _, want := range []string{"deps", "nightly"} {
		if !strings.Contains(" "+strings.Join(called, " ")+" ", " "+want+" ") {
			t.Errorf("the workflow does not run make %s (it runs %v)", want, called)
		}
	}
	if !strings.Contains(string(data), "GITHUB_STEP_SUMMARY") || !strings.Contains(string(data), "actions/upload-artifact") {
		t.Error("the workflow writes no job summary or uploads no artifact")
	}
}

// makeTargets parses the Makefile's rules: "target: prerequisites" at column 0.
func makeTargets(t *testing.T) map[string]bool {
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:([^=]|$)`)
	targets := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := rule.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
	}
	if !targets["build"] || targets["NIGHTLY_DIR"] {
		t.Fatalf("Makefile parsed wrong: %v", targets)
	}
	return targets
}
