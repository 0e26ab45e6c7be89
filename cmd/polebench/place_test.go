package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/placement/etcdsys"
	"github.com/polebench/polebench/spec"
)

// TestPlaceJob: `place --job FILE`, as the runner starts it, reads the job and gets as
// far as the controller's own checks (here a policy it refuses); without a job, the
// flags are the spec's and the members'.
func TestPlaceJob(t *testing.T) {
	sp, err := spec.Resolve("three-dc-dep1")
	if err != nil {
		t.Fatal(err)
	}
	job := etcdsys.Job{Topology: sp.TopologyConfig(), Policy: placement.Policy{Name: "fastest"}, Members: map[int]string{1: "127.0.0.1:1"}}
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "placement.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"place", "--job", path}, `unknown placement policy "fastest"`},
		{[]string{"place", "--job", path, "two-dc"}, "--job gives the deployment and policy: no SPEC or overrides beside it"},
		{[]string{"place", "three-dc-dep1", "--members", "p1=http://127.0.0.1:1"}, "--members names 1 of the spec's 5 servers"},
	} {
		code, _, errs := runCLI(tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("polebench %s: exit %d, %q; want an error with %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
}
