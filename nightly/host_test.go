package nightly

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/benchdata"
)

func TestHostVerdict(t *testing.T) {
	write := func(dir string, host map[string]*analysis.HostWindow) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := (&analysis.Summary{Host: host}).WriteFile(filepath.Join(dir, "summary.json")); err != nil {
			t.Fatal(err)
		}
	}
	trusted := &analysis.HostWindow{Verdict: analysis.Trusted}
	root := t.TempDir()
	write(filepath.Join(root, "quiet", "rep1"), map[string]*analysis.HostWindow{"before": trusted, "after": trusted})
	write(filepath.Join(root, "quiet", "rep2"), map[string]*analysis.HostWindow{"before": trusted})
	write(filepath.Join(root, "busy", "rep1"), map[string]*analysis.HostWindow{"before": trusted,
		"after": {Verdict: analysis.Untrusted, Reasons: []string{"97 % of the requests overlapped a stall"}}})
	write(filepath.Join(root, "sim"), nil)
	for _, c := range []struct{ dir, verdict, note string }{
		{"quiet", analysis.Trusted, ""},
		{"busy", "1 of 2 windows trusted (0 degraded, 1 untrusted)", "rep1, after: 97 % of the requests overlapped a stall"},
		{"sim", benchdata.HostNotMeasured, ""},
		{"missing", benchdata.HostNotMeasured, ""},
	} {
		if v := hostVerdict(filepath.Join(root, c.dir)); v.Verdict != c.verdict || v.Note != c.note {
			t.Errorf("%s: %+v, want %q (%q)", c.dir, v, c.verdict, c.note)
		}
	}
}
