package zktest

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestStandaloneStartKillRestart(t *testing.T) {
	c := StartT(t, 1, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := c.Server(1).ClientAddr
	if out, err := FourLetter(ctx, addr, "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v", out, err)
	}
	if mode, err := Mode(ctx, addr); err != nil || mode != "standalone" {
		t.Fatalf("mode = %q, %v", mode, err)
	}
	if id, err := c.Leader(ctx); err != nil || id != 1 {
		t.Fatalf("leader = %d, %v", id, err)
	}
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	if _, err := FourLetter(ctx, addr, "ruok"); err == nil {
		t.Fatal("killed server still answers")
	}
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if out, err := FourLetter(ctx, addr, "srvr"); err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("after restart srvr = %q, %v", out, err)
	}
}
