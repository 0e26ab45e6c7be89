package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
)

// printBackends writes the table of what each registered backend and flavor
// declares it carries (package cluster/backend): `polebench help backends`.
func printBackends(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tFLAVORS\tFAULTS\tPAUSE\tDISK FAULTS\tLINKS\tSCHEDULES\tRATE/LOSS\tRUNS IN")
	for _, name := range backend.Names() {
		b, _ := backend.Lookup(name)
		c := b.Carries
		in := "real time"
		if c.Simulated {
			in = "virtual time"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, strings.Join(flavorsOn(name), ", "), faults(c), pause(c),
			disk(c), links(c.Links), yes(c.Links.Schedules), yes(c.Links.RateLoss), in)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "FLAVOR\tBACKENDS\tFAULTS\tPAUSE\tDISK FAULTS\tSCHEDULES\tORACLES\tPRELOAD\tFIRST LEADER\tLEADER TRANSFER")
	for _, name := range backend.Flavors() {
		f, _ := backend.LookupFlavor(name)
		c := f.Carries
		oracles, first := "all", "the spec's"
		if f.Oracles != nil {
			oracles = strings.Join(f.Oracles, ", ")
		}
		if f.HighestFirst {
			first = "the highest id"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, strings.Join(backend.For(name), ", "), faults(c), pause(c),
			disk(c), yes(c.Links.Schedules), oracles, yes(f.Preload), first, yes(c.LeaderTransfer))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nA run carries what both its backend and its flavor carry. Fault kinds: %s.\n"+
		"Disk faults are lose-unsynced, torn-tail and slow-disk. Adding a backend or a flavor: docs/backends.md.\n", kindList(nemesis.Kinds()))
	return err
}

func flavorsOn(name string) []string {
	var out []string
	for _, f := range backend.Flavors() {
		if backend.Runs(name, f) {
			out = append(out, f)
		}
	}
	return out
}

// faults is "all", "all but a, b" or the kinds c plays.
func faults(c backend.Carries) string {
	var lacks []nemesis.Kind
	for _, k := range nemesis.Kinds() {
		if !c.Plays(k) {
			lacks = append(lacks, k)
		}
	}
	switch {
	case len(lacks) == 0:
		return "all"
	case len(lacks) <= len(nemesis.Kinds())/2:
		return "all but " + kindList(lacks)
	}
	return kindList(c.Faults)
}

func pause(c backend.Carries) string { return yes(c.Plays(nemesis.Pause) && c.Plays(nemesis.Resume)) }

// disk is which disk faults c plays.
func disk(c backend.Carries) string {
	all := []nemesis.Kind{nemesis.LoseUnsynced, nemesis.TornTail, nemesis.SlowDisk}
	plays := slices.DeleteFunc(slices.Clone(all), func(k nemesis.Kind) bool { return !c.Plays(k) })
	switch len(plays) {
	case len(all):
		return "all"
	case 0:
		return "none"
	}
	return kindList(plays)
}

func links(l backend.Links) string {
	var m []string
	if l.Kernel {
		m = append(m, "kernel netem")
	}
	if l.UserSpace {
		m = append(m, "user space")
	}
	if len(m) == 2 {
		return "kernel netem, else user space"
	}
	return strings.Join(m, "")
}

func kindList(ks []nemesis.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
