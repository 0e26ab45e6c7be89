// Command poled is one replica of a POLE-enabled, ZooKeeper-compatible ensemble.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/replica"
)

func main() {
	cfg, err := replica.ParseFlags("poled", os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "poled:", err)
		}
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The hiccup meter runs from the start: what held this process during a run is
	// what the harness must set apart from what the replica did.
	meter := hiccup.New(0, 0)
	go meter.Run(ctx)
	n, err := replica.Start(ctx, *cfg, replica.Listeners{}, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "poled:", err)
		os.Exit(1)
	}
	n.MeterHiccups(meter)
	self := cfg.Self()
	log.Info("serving", "id", cfg.ID, "client", self.ClientAddr(), "admin", self.AdminAddr(), "oracle", cfg.Oracle.Name)
	<-n.Done()
	n.Stop()
	log.Info("stopped")
}
