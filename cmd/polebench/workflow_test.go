package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestCIWorkflow parses .github/workflows/ci.yml and checks that it runs on pushes and
// pull requests, and runs the README's test command, make ci, whose target exists.
func TestCIWorkflow(t *testing.T) {
	wf, called := workflow(t, "ci.yml")
	for _, on := range []string{"push", "pull_request"} {
		if _, ok := wf.On[on]; !ok {
			t.Errorf("no %s trigger", on)
		}
	}
	if !slices.Contains(called, "ci") {
		t.Errorf("the workflow does not run make ci (it runs %v)", called)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "make ci     # the tests") {
		t.Error("the README's test command is not make ci: the workflow runs another")
	}
}

// TestNightlyWorkflow parses .github/workflows/nightly.yml and checks that it runs on
// a schedule and on demand, and that every make target it calls exists in the Makefile.
func TestNightlyWorkflow(t *testing.T) {
	wf, called := workflow(t, "nightly.yml")
	if _, ok := wf.On["schedule"]; !ok {
		t.Error("no schedule trigger")
	}
	if _, ok := wf.On["workflow_dispatch"]; !ok {
		t.Error("no workflow_dispatch trigger")
	}
	for _, want := range []string{"deps", "nightly"} {
		if !slices.Contains(called, want) {
			t.Errorf("the workflow does not run make %s (it runs %v)", want, called)
		}
	}
	if !strings.Contains(wf.text, "GITHUB_STEP_SUMMARY") || !strings.Contains(wf.text, "actions/upload-artifact") {
		t.Error("the workflow writes no job summary or uploads no artifact")
	}
}

type githubWorkflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Steps []struct {
			Name string
			Uses string
			Run  string
		}
	}
	text string
}

// workflow parses .github/workflows/name and returns the make targets its steps call,
// failing the test for any the Makefile does not define.
func workflow(t *testing.T, name string) (githubWorkflow, []string) {
	t.Helper()
	data, err := os.ReadFile("../../.github/workflows/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var wf githubWorkflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	wf.text = string(data)
	targets := makeTargets(t)
	makeCall := regexp.MustCompile(`\bmake\s+([A-Za-z0-9_.-]+)`)
	var called []string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			for _, m := range makeCall.FindAllStringSubmatch(st.Run, -1) {
				called = append(called, m[1])
				if !targets[m[1]] {
					t.Errorf("%s: step %q calls make %s, which the Makefile does not define", name, st.Name, m[1])
				}
			}
		}
	}
	return wf, called
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
