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
	n, err := replica.Start(ctx, *cfg, replica.Listeners{}, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "poled:", err)
		os.Exit(1)
	}
	self := cfg.Self()
	log.Info("serving", "id", cfg.ID, "client", self.ClientAddr(), "admin", self.AdminAddr(), "oracle", cfg.Oracle.Name)
	<-n.Done()
	n.Stop()
	log.Info("stopped")
}
