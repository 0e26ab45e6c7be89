package main

import (
	"fmt"
	"io"

	"github.com/polebench/polebench/cluster/netns"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/trial"
)

const netemSummary = "Say whether this kernel can run tc-netem (probe), or apply, show and clear the spec's link plan on a running netns cluster"

func runNetem(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage: polebench netem probe | apply SPEC [--label L] | show [--label L] | clear [--label L]")
		return errUsage
	}
	ctx, stop := signalContext()
	defer stop()
	verb, args := args[0], args[1:]
	if verb == "probe" {
		if err := netem.Probe(ctx); err != nil {
			fmt.Fprintf(stdout, "no: %v; polebench uses user-space links instead\n", err)
			return nil
		}
		fmt.Fprintln(stdout, "yes: this kernel runs netem (htb, u32 and a netem leaf with a Pareto table installed in a scratch namespace)")
		return nil
	}
	fs := newFlags("netem "+verb, "[SPEC] [--label L]", netemSummary, stderr)
	label := fs.String("label", "", "the netns cluster's label (default: the only one running)")
	switch verb {
	case "apply":
		spec, err := specArg(fs, args, overrideFlags(fs))
		if err != nil {
			return err
		}
		t, err := trial.New(spec, 1)
		if err != nil {
			return err
		}
		if err := netns.Apply(ctx, *label, t.Plan); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d links\n", len(t.Plan.Links))
	case "show":
		if _, err := parseInterleaved(fs, args); err != nil {
			return flagError(err)
		}
		out, err := netns.Show(ctx, *label)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, out)
	case "clear":
		if _, err := parseInterleaved(fs, args); err != nil {
			return flagError(err)
		}
		if err := netns.Clear(ctx, *label); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "cleared")
	default:
		fmt.Fprintf(stderr, "polebench netem: unknown verb %q (probe, apply, show, clear)\n", verb)
		return errUsage
	}
	return nil
}
