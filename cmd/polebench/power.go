package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/sim"
)

// A checker's power: for each broken variant (replica.Variants, one server broken),
// how many seeds it takes to catch it, the schedule that did (shrunk), and the
// sound replica on that seed.

// checkFlags are the flags both checkers share: the generator, one broken server,
// and the power mode.
type checkFlags struct {
	schedule *string
	broken   *string
	variants *string
}

func newCheckFlags(fs *flag.FlagSet) checkFlags {
	return checkFlags{
		schedule: fs.String("schedule", sim.ScheduleDense, "the generator of each seed's schedule: "+strings.Join(sim.Schedules, " or ")),
		broken:   fs.String("broken", "", "break one server on purpose, pN:VARIANT (tests of the checker's power: "+variantNames()+")"),
		variants: fs.String("variants", "", "the power table: for each broken variant named (all, or a comma-separated list), seeds from --from until the first caught (at most --seeds), its shrunk schedule, and the sound replica on that seed"),
	}
}

// brokenServers is --broken as a config's map, nil without it.
func (f checkFlags) brokenServers() (map[int]replica.Variant, error) {
	if *f.broken == "" {
		return nil, nil
	}
	id, v, err := replica.ParseBroken(*f.broken)
	if err != nil {
		return nil, err
	}
	return map[int]replica.Variant{id: v}, nil
}

// chosen is the variants --variants names, none without it.
func (f checkFlags) chosen() ([]replica.VariantInfo, error) {
	switch *f.variants {
	case "":
		return nil, nil
	case "all":
		return replica.Variants, nil
	}
	var out []replica.VariantInfo
	for _, name := range strings.Split(*f.variants, ",") {
		v, err := replica.VariantOf(name)
		if err != nil {
			return nil, fmt.Errorf("--variants: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

func variantNames() string {
	var names []string
	for _, v := range replica.Variants {
		names = append(names, string(v.Name))
	}
	return strings.Join(names, ", ")
}

// seedRun runs one seed's schedule with broken servers (nil: the sound replica) and
// says its verdict (verdictOK, verdictUnsafe, ...).
type seedRun func(ctx context.Context, broken map[int]replica.Variant, seed uint64, fs []nemesis.Fault) (verdict string, detail error)

// powerRow is one variant's line of the table.
type powerRow struct {
	v       replica.VariantInfo
	tried   int    // seeds run, the catching one included
	seed    uint64 // the first that caught it; 0: none did
	detail  error
	faults  []nemesis.Fault // the seed's schedule
	shrunk  []nemesis.Fault
	sound   string // the sound replica's verdict on the seed
	took    time.Duration
	skipped string // why the executor cannot carry it
}

// power measures each variant: seeds from from (at most seeds of them, parallel at
// once in a batch; the first caught in seed order counts) until one is unsafe.
func power(ctx context.Context, variants []replica.VariantInfo, carries func(replica.VariantInfo) string, from uint64, seeds, parallel int,
	schedule func(uint64) []nemesis.Fault, run seedRun, line *progress.Line) []powerRow {
	var rows []powerRow
	for _, v := range variants {
		r := powerRow{v: v}
		t0 := time.Now()
		if r.skipped = carries(v); r.skipped != "" {
			rows = append(rows, r)
			continue
		}
		broken := map[int]replica.Variant{v.Server: v.Name}
		for i := 0; i < seeds && r.seed == 0 && ctx.Err() == nil; i += parallel {
			n := min(parallel, seeds-i)
			line.Update("power: %s on p%d, seeds %d-%d of %d from %d", v.Name, v.Server, i+1, i+n, seeds, from)
			verdicts := make([]string, n)
			details := make([]error, n)
			var wg sync.WaitGroup
			for j := range n {
				wg.Go(func() {
					seed := from + uint64(i+j)
					verdicts[j], details[j] = run(ctx, broken, seed, schedule(seed))
				})
			}
			wg.Wait()
			for j := range n {
				if verdicts[j] == verdictUnsafe {
					r.seed, r.tried, r.detail = from+uint64(i+j), i+j+1, details[j]
					break
				}
			}
		}
		if r.seed == 0 {
			r.tried = seeds
		} else if ctx.Err() == nil {
			r.faults = schedule(r.seed)
			r.sound, _ = run(ctx, nil, r.seed, r.faults)
			line.Update("power: %s caught at seed %d; shrinking %d faults", v.Name, r.seed, len(r.faults))
			r.shrunk = shrinkFaults(ctx, r.faults, func(fs []nemesis.Fault) bool {
				verdict, _ := run(ctx, broken, r.seed, fs)
				return verdict == verdictUnsafe
			})
		}
		r.took = time.Since(t0)
		line.Note("%s", r.text())
		rows = append(rows, r)
	}
	return rows
}

func (r powerRow) text() string {
	switch {
	case r.skipped != "":
		return fmt.Sprintf("%s (p%d): not carried: %s", r.v.Name, r.v.Server, r.skipped)
	case r.seed == 0:
		return fmt.Sprintf("%s (p%d): not caught in %d seeds (%v)", r.v.Name, r.v.Server, r.tried, r.took.Round(time.Second))
	}
	return fmt.Sprintf("%s (p%d): caught at seed %d after %d seeds (%v): %s\n  sound replica on seed %d: %s\n  shrunk from %d to %d faults: %v",
		r.v.Name, r.v.Server, r.seed, r.tried, r.took.Round(time.Second), firstLine(r.detail), r.seed, r.sound, len(r.faults), len(r.shrunk), r.shrunk)
}

func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// printPower writes the table: variant, server, seeds to the first catch, the
// seed, the sound replica there, and the shrunk schedule.
func printPower(w io.Writer, rows []powerRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "variant\tserver\tseeds to catch\tseed\tsound there\tshrunk schedule\n")
	for _, r := range rows {
		switch {
		case r.skipped != "":
			fmt.Fprintf(tw, "%s\tp%d\tnot carried\t\t\t%s\n", r.v.Name, r.v.Server, r.skipped)
		case r.seed == 0:
			fmt.Fprintf(tw, "%s\tp%d\tnot in %d\t\t\t\n", r.v.Name, r.v.Server, r.tried)
		default:
			fmt.Fprintf(tw, "%s\tp%d\t%d\t%d\t%s\t%v\n", r.v.Name, r.v.Server, r.tried, r.seed, r.sound, r.shrunk)
		}
	}
	tw.Flush()
}

// shrinkFaults removes groups of faults (faultGroups) from fs while fails holds, and
// returns the smallest schedule it found.
func shrinkFaults(ctx context.Context, fs []nemesis.Fault, fails func([]nemesis.Fault) bool) []nemesis.Fault {
	best := fs
	for removed := true; removed && ctx.Err() == nil; {
		removed = false
		groups := faultGroups(best)
		for gi := len(groups) - 1; gi >= 0 && ctx.Err() == nil; gi-- {
			drop := map[int]bool{}
			for _, i := range groups[gi] {
				drop[i] = true
			}
			try := []nemesis.Fault{}
			for i, f := range best {
				if !drop[i] {
					try = append(try, f)
				}
			}
			if fails(try) {
				best, removed = try, true
				break
			}
		}
	}
	return best
}
