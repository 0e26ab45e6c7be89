package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies the campaign directories under src into a temporary directory (the
// report draws its figures into them) and returns it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// On the recorded results of sweep fig7b-dep1-etcd --quick beside poled's fig7b-dep1
// --quick (testdata/policies), the report sets each of the paper's Fig. 7b numbers
// beside poled's measurement and a column per placement policy on etcd, at the same
// p: every number has its three policies, each measured with the model beside it.
func TestPolicyTable(t *testing.T) {
	dir := copyTree(t, filepath.Join("testdata", "policies"))
	dirs := []string{filepath.Join(dir, "fig7b-dep1"), filepath.Join(dir, "fig7b-dep1-etcd")}
	r, err := BuildReport(dirs, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Policies) != 4 {
		t.Fatalf("%d rows of policies, want the paper's 4 numbers of Fig. 7b (Dep. 1)", len(r.Policies))
	}
	for _, pr := range r.Policies {
		if len(pr.Poled) == 0 || pr.Poled[0].Measured == nil {
			t.Errorf("%s: no poled measurement beside it", pr.What)
		}
		if got := policyNames([]PolicyRow{pr}); strings.Join(got, " ") != "none priority:2,3,4,1 latency" {
			t.Errorf("%s: policies %v", pr.What, got)
		}
		for _, c := range pr.Policies {
			if c.Measured == nil || c.Model == nil || c.Group.Leader == 0 {
				t.Errorf("%s, %s: %+v, want a measurement, its model and its leader", pr.What, c.Policy, c)
			}
		}
	}
	if err := r.WriteMarkdown(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(md), "\n## "+policyTitle("fig7b-dep1-etcd")+"\n")
	if !ok {
		t.Fatalf("report.md has no %q section", policyTitle("fig7b-dep1-etcd"))
	}
	table, _, _ = strings.Cut(table, "\n## ")
	golden := filepath.Join("testdata", "policies", "table.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if table != string(want) {
		t.Errorf("report.md's policy table:\n%s\nwant (%s):\n%s", table, golden, want)
	}
	if err := r.WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<table class="policies" data-campaign="fig7b-dep1-etcd">`) || !strings.Contains(string(html), "<th>etcd, latency</th>") {
		t.Error("report.html has no policy table for fig7b-dep1-etcd")
	}
}
