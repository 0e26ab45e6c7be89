package zab

import "testing"

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
