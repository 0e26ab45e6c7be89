// Command cmd builds the poled image for `make image` (see image.BuildCommand):
//
//	go run ./cluster/image/cmd [-binary FILE] [-source DIR]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/polebench/polebench/cluster/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := image.BuildCommand(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
