package image

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// BuildCommand is `make image` (and `polebench image build`): it builds a static poled
// from the source tree, or packages -binary, builds polebench/poled:<hash> FROM
// scratch when missing, tags it polebench/poled:latest for docker-compose.yml, and
// prints the tag. args are the command's flags.
func BuildCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binary := fs.String("binary", "", "package this static linux poled instead of building ./cmd/poled")
	source := fs.String("source", ".", "the polebench source tree (or a directory inside it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("image build: unexpected argument %q", fs.Arg(0))
	}
	cli, err := Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	tag, built, err := Poled(ctx, cli, Options{Binary: *binary, Source: *source, ExtraTags: []string{Latest}, Logger: log})
	if err != nil {
		return err
	}
	state := "up to date"
	if built {
		state = "built"
	}
	fmt.Fprintf(stdout, "%s (%s), also tagged %s\n", tag, state, Latest)
	return nil
}
