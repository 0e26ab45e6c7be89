package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sweep --quick runs a campaign's quick form, so it refuses what has none: a spec, and
// a campaign file without a quick: section.
func TestSweepQuickErrors(t *testing.T) {
	noQuick := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(noQuick, []byte("name: c\nspec: two-dc\nvary:\n  - {field: p, values: [\"0\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, want string }{
		{"two-dc", "--quick: two-dc is a spec, not a campaign with a quick form"},
		{noQuick, "--quick: campaign c has no quick form"},
	} {
		code, _, errs := runCLI("sweep", tc.arg, "--quick", "--out", t.TempDir())
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("sweep %s --quick: exit %d, %q; want an error saying %q", tc.arg, code, errs, tc.want)
		}
	}
}
