package main

import (
	"bytes"
	"os"
	"os/exec"
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
		Container struct {
			Image   string
			Options string
			Volumes []string
		}
		Steps []struct {
			Name string
			Uses string
			Run  string
		}
	}
	text string
}

// TestWorkflowsRunInTheDistribution: every job of both workflows runs in the image of
// the distribution whose package names scripts/install-deps.sh uses (it declares
// them, and refuses any other system), privileged (namespaces, veths, qdiscs, qemu's
// /dev/kvm, an engine of its own with its cgroups), with that engine's data root on a
// volume, and installs and starts what the tests need: make deps and make engine,
// itself or through make ci. On a machine of that distribution (CI's), apt knows
// every package the script names.
func TestWorkflowsRunInTheDistribution(t *testing.T) {
	dist, codename, packages := installDeps(t)
	ciPrereqs := makePrereqs(t, "ci")
	for _, name := range []string{"ci.yml", "nightly.yml"} {
		wf, called := workflow(t, name)
		for id, job := range wf.Jobs {
			c := job.Container
			if img := strings.SplitN(c.Image, ":", 2); len(img) != 2 || img[0] != dist ||
				(img[1] != codename && !strings.HasPrefix(img[1], codename+"-")) {
				t.Errorf("%s: job %s runs in %q, not %s:%s (install-deps.sh's package names are %s %s's)", name, id, c.Image, dist, codename, dist, codename)
			}
			if !slices.Contains(strings.Fields(c.Options), "--privileged") {
				t.Errorf("%s: job %s's container is not --privileged (options %q)", name, id, c.Options)
			}
			if !slices.ContainsFunc(c.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/var/lib/docker") }) {
				t.Errorf("%s: job %s keeps the engine's data root on the container's overlayfs (volumes %v)", name, id, c.Volumes)
			}
		}
		for _, want := range []string{"deps", "engine"} {
			if !slices.Contains(called, want) && !(slices.Contains(called, "ci") && slices.Contains(ciPrereqs, want)) {
				t.Errorf("%s runs neither make %s nor a make ci that does (it runs %v; ci needs %v)", name, want, called, ciPrereqs)
			}
		}
	}
	osRelease, _ := os.ReadFile("/etc/os-release")
	release := map[string]string{}
	for _, line := range strings.Split(string(osRelease), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			release[k] = strings.Trim(v, `"`)
		}
	}
	if release["ID"] != dist || release["VERSION_CODENAME"] != codename {
		t.Logf("this machine is %s %s, not %s %s: apt's names not checked here", release["ID"], release["VERSION_CODENAME"], dist, codename)
		return
	}
	// One call: apt-cache reads every package list each time (no cache file kept here).
	var stderr bytes.Buffer
	cmd := exec.Command("apt-cache", "show", "--no-all-versions")
	cmd.Args = append(cmd.Args, packages...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	known := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, "Package: "); ok {
			known[name] = true
		}
	}
	for _, p := range packages {
		if !known[p] {
			t.Errorf("install-deps.sh names %s, which %s %s's apt does not know (apt-cache show: %v %s)", p, dist, codename, err, bytes.TrimSpace(stderr.Bytes()))
		}
	}
}

// installDeps reads scripts/install-deps.sh: the distribution and codename it
// declares, and the packages it installs.
func installDeps(t *testing.T) (dist, codename string, packages []string) {
	t.Helper()
	b, err := os.ReadFile("../../scripts/install-deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^distribution=(\S+) codename=(\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("install-deps.sh declares no distribution=... codename=... line")
	}
	list := regexp.MustCompile(`(?s)\npackages=\((.*?)\n\)`).FindSubmatch(b)
	if list == nil {
		t.Fatal("install-deps.sh has no packages=( ... ) list")
	}
	for _, line := range strings.Split(string(list[1]), "\n") {
		line, _, _ = strings.Cut(line, "#")
		packages = append(packages, strings.Fields(line)...)
	}
	if len(packages) < 5 {
		t.Fatalf("install-deps.sh's list parsed wrong: %v", packages)
	}
	return string(m[1]), string(m[2]), packages
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
	var called []string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			for _, target := range makeTargetsRun(st.Run) {
				called = append(called, target)
				if !targets[target] {
					t.Errorf("%s: step %q calls make %s, which the Makefile does not define", name, st.Name, target)
				}
			}
		}
	}
	return wf, called
}

// makeTargetsRun is the targets of the make commands in a step's shell script: a
// command is split off at a newline, ;, &&, || or |, and it is make's when make is its
// first word after variable assignments (CI=true make ci). Flags and variables given
// to make are not targets.
func makeTargetsRun(script string) []string {
	var targets []string
	for _, c := range regexp.MustCompile(`\n|;|&&|\|\|?`).Split(script, -1) {
		words := strings.Fields(c)
		for len(words) > 0 && strings.Contains(words[0], "=") {
			words = words[1:]
		}
		if len(words) == 0 || words[0] != "make" {
			continue
		}
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
				targets = append(targets, w)
			}
		}
	}
	return targets
}

// makePrereqs is what the Makefile's rule for target runs: its prerequisites and the
// targets its recipe's $(MAKE) lines name (ci runs deps beside lint that way).
func makePrereqs(t *testing.T, target string) []string {
	t.Helper()
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `\s*:([^=\n]*)\n((?:\t.*\n)*)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("the Makefile has no rule for %s", target)
	}
	runs := strings.Fields(string(m[1]))
	for _, line := range strings.Split(string(m[2]), "\n") {
		_, sub, ok := strings.Cut(line, "$(MAKE)")
		if !ok {
			continue
		}
		for _, w := range strings.Fields(sub) {
			if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
				runs = append(runs, w)
			}
		}
	}
	return runs
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

func TestMakeTargetsRun(t *testing.T) {
	for _, c := range []struct {
		script string
		want   []string
	}{
		{"CI=true make ci", []string{"ci"}},
		{"make deps engine", []string{"deps", "engine"}},
		{"apt-get install -y git make ca-certificates", nil},
		{`echo "make nightly failed: see fidelity.md"`, nil},
		{"status=0\nmake -j2 NIGHTLY_K=5 nightly || status=$?\nexit $status", []string{"nightly"}},
		{"cd x && make build; make test | tee log", []string{"build", "test"}},
	} {
		if got := makeTargetsRun(c.script); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.script, got, c.want)
		}
	}
}
