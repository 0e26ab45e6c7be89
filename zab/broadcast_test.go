package zab

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestBroadcastCommitsEverywhere(t *testing.T) {
	s := newSim(t, 1, defaultSimConfig())
	s.runFor(1_000_000)
	s.converge(1_000_000)
	s.checkFinal()
	if len(s.acked) < 500 {
		t.Fatalf("only %d writes acknowledged in 1 s at 1000/s", len(s.acked))
	}
	t.Logf("acked %d, unknown %d, canon %d, msgs %v", len(s.acked), s.unknown, len(s.canon), s.sent)
}

// TestResyncLogsOnce: a follower whose link to its leader keeps breaking before it
// reaches broadcast (an outdated server's cut link) warns once and then every 100th
// attempt, not at every retry.
func TestResyncLogsOnce(t *testing.T) {
	var logs strings.Builder
	cfg := DefaultConfig(1, []int{1, 2, 3}, 50*time.Millisecond)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := New(cfg, Persisted{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Elected(3); err != nil {
		t.Fatal(err)
	}
	for range 250 {
		n.Disconnected(3)
	}
	if got := strings.Count(logs.String(), "msg=\"resync with leader\""); got != 1 {
		t.Errorf("%d warnings for the first resync, want 1:\n%s", got, logs.String())
	}
	if got := strings.Count(logs.String(), "still resyncing"); got != 2 {
		t.Errorf("%d 'still resyncing' warnings in 250 attempts, want 2 (100th, 200th):\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "attempts=200") {
		t.Errorf("the 200th attempt is not counted:\n%s", logs.String())
	}
}
