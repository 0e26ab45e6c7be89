package netem

import (
	"context"
	"os"
	"strings"
	"testing"
)

// needRoot skips locally and fails under CI when not root (namespaces need it).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test needs root (network namespaces) and CI runs as root")
		}
		t.Skip("needs root for network namespaces")
	}
}

// kernelHasNetem is what this machine's kernel says; tests that need sch_netem run
// only where it exists (the VM test covers it), the others check the failure path.
func kernelHasNetem(t *testing.T) bool {
	t.Helper()
	return Probe(context.Background()) == nil
}

func TestProbe(t *testing.T) {
	needRoot(t)
	err := Probe(context.Background())
	t.Logf("Probe: %v", err)
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("probe reason spans lines: %q", msg)
	}
	if !strings.HasPrefix(msg, "kernel lacks ") {
		t.Errorf("probe reason %q does not say what the kernel lacks", msg)
	}
	if strings.Contains(msg, "sch_netem") && !strings.Contains(msg, "is module sch_netem available?") {
		t.Errorf("probe reason %q lacks the module hint", msg)
	}
}

func TestProbeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Probe(ctx); err != context.Canceled {
		t.Errorf("Probe(canceled) = %v", err)
	}
}
