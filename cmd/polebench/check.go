package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/csvfile"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

const checkSummary = "sim check's random fault schedules on a real cluster; per seed: lost acknowledged writes, linearizability, convergence after the last heal"

// checkArgs is check's argument summary, in its usage and the command list.
const checkArgs = "[SPEC] [--backend B] [--seeds N] [--from S] [--shrink]"

// checkConverge is how long after the load the servers have by default to converge:
// more than poled's own bound on a follower's recovery (zab.DefaultInitLimit, after
// which a follower that was never synced looks for a leader again).
const checkConverge = 30 * time.Second

// A check's verdicts for one seed.
const (
	verdictOK     = "ok"
	verdictUnsafe = "unsafe" // lost or unexplained writes, a non-linearizable history
	verdictStuck  = "stuck"  // the servers did not converge and serve after the last heal
	verdictError  = "error"  // the run itself failed (a cluster that did not start, ...)
)

// checkRun is one seed's run on a real cluster.
type checkRun struct {
	seed    uint64
	faults  []nemesis.Fault
	verdict string
	detail  error
	dir     string
	took    time.Duration
	ok      int64
	failed  int64
	unknown int64
	lost    int
	lin     string
}

// checker runs schedules of one spec on its backend.
type checker struct {
	sp       *spec.Spec
	out      string
	converge time.Duration
	// broken are servers broken on purpose (--broken, --variants; the local
	// backend's servers only), for the checker's power.
	broken map[int]replica.Variant
}

// run runs seed's schedule faults into dir.
func (c *checker) run(ctx context.Context, seed uint64, faults []nemesis.Fault, dir string) (r checkRun) {
	r = checkRun{seed: seed, faults: faults, dir: dir}
	t0 := time.Now()
	defer func() { r.took = time.Since(t0) }()
	// The schedule first: a replay's --faults reads it, and a run that never ends
	// keeps it.
	if err := writeFaults(dir, faults); err != nil {
		r.verdict, r.detail = verdictError, err
		return r
	}
	sp, err := c.sp.With(spec.Setting{Name: "seed", Value: strconv.FormatUint(seed, 10)}, spec.Setting{Name: "repetitions", Value: "1"})
	if err != nil {
		r.verdict, r.detail = verdictError, err
		return r
	}
	var stuck error
	res, err := runner.Run(ctx, runner.Options{Spec: sp, Out: dir, Faults: faults, Fsync: true, WarmUp: -1, Broken: c.broken,
		AfterLoad: func(ctx context.Context, cl cluster.Cluster) error {
			stuck = runner.Converge(ctx, cl, cmp.Or(c.converge, checkConverge))
			return nil
		}})
	var rep *runner.Repetition
	if res != nil && len(res.Runs) == 1 {
		rep = &res.Runs[0]
	}
	switch {
	case (rep == nil || rep.Verification == nil) && stuck != nil:
		// A server that never served again could not be read back either.
		r.verdict, r.detail = verdictStuck, errors.Join(stuck, err)
	case rep == nil || rep.Verification == nil:
		r.verdict, r.detail = verdictError, cmpOr(err, errors.New("no verification"))
	default:
		v := rep.Verification
		r.lost, r.lin = v.LostAcknowledgedWrites, v.Linearizability
		s := rep.Summary.Requests
		r.ok, r.failed, r.unknown = int64(s.OK), int64(s.Failed), int64(s.Unknown)
		switch {
		case v.Err() != nil:
			r.verdict, r.detail = verdictUnsafe, v.Err()
		case stuck != nil && unplayed(dir, faults) != nil:
			// Not the servers' liveness: the schedule was never carried out.
			r.verdict, r.detail = verdictError, errors.Join(unplayed(dir, faults), stuck)
		case stuck != nil:
			r.verdict, r.detail = verdictStuck, stuck
		case err != nil:
			r.verdict, r.detail = verdictError, err
		default:
			r.verdict = verdictOK
		}
	}
	return r
}

// unplayed says whether the run in dir carried out fewer of faults than scheduled:
// the nemesis plays them one after another until the load ends, and on a loaded
// machine slow kills can push the rest (a restart, say) past the end; or one failed
// (a restart whose port another process took).
func unplayed(dir string, faults []nemesis.Fault) error {
	recs, err := record.ReadEvents(filepath.Join(dir, trial.EventsFile))
	if err != nil {
		return err
	}
	played := 0
	var failed []string
	for _, r := range recs {
		if r.Source != record.SourceHarness || r.Fault == "" {
			continue
		}
		played++
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("%s p%d: %s", r.Fault, r.Server, r.Error))
		}
	}
	switch {
	case played < len(faults):
		return fmt.Errorf("the nemesis carried out %d of the schedule's %d faults before the load ended (it fell behind: the schedule was not played)", played, len(faults))
	case len(failed) > 0:
		return fmt.Errorf("the schedule was not carried out: %s", strings.Join(failed, "; "))
	}
	return nil
}

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// faultGroups pairs each fault with what undoes it (a kill with the restart, a pause
// with the resume, a cut with the heal, a slow disk with its restore), so that a
// shrink removes them together and every schedule it tries stays playable.
func faultGroups(fs []nemesis.Fault) [][]int {
	used := make([]bool, len(fs))
	var out [][]int
	for i, f := range fs {
		if used[i] {
			continue
		}
		used[i] = true
		g := []int{i}
		undoes := func(u nemesis.Fault) bool {
			switch {
			case f.Stops():
				return u.Kind == nemesis.Restart && u.Server == f.Server
			case f.Kind == nemesis.Pause:
				return u.Kind == nemesis.Resume && u.Server == f.Server
			case f.Cuts():
				return u.Kind == nemesis.Heal
			case f.Kind == nemesis.SlowDisk && f.Delay > 0:
				return u.Kind == nemesis.SlowDisk && u.Server == f.Server && u.Delay == 0
			}
			return false
		}
		for j := i + 1; j < len(fs); j++ {
			if !used[j] && undoes(fs[j]) {
				if fs[j].Kind != nemesis.Heal || !slices.ContainsFunc(fs[i+1:j], nemesis.Fault.Cuts) {
					used[j] = true
					g = append(g, j)
				}
				break
			}
		}
		out = append(out, g)
	}
	return out
}

// shrink removes groups of faults (faultGroups) from a failing schedule while the
// failure (the same verdict) stays, and returns the smallest it found.
func (c *checker) shrink(ctx context.Context, failed checkRun, line *progress.Line) checkRun {
	best := failed
	for removed := true; removed && ctx.Err() == nil; {
		removed = false
		groups := faultGroups(best.faults)
		for gi := len(groups) - 1; gi >= 0 && ctx.Err() == nil; gi-- {
			drop := map[int]bool{}
			for _, i := range groups[gi] {
				drop[i] = true
			}
			fs := []nemesis.Fault{} // none left is faults.json [], no faults; null would replay the seed's own
			for i, f := range best.faults {
				if !drop[i] {
					fs = append(fs, f)
				}
			}
			dir := filepath.Join(c.out, fmt.Sprintf("seed-%d-shrink-%d", failed.seed, len(fs)))
			line.Update("shrinking seed %d: %d faults, trying %d", failed.seed, len(best.faults), len(fs))
			r := c.run(ctx, failed.seed, fs, dir)
			if r.verdict == failed.verdict {
				best, removed = r, true
				break
			}
			os.RemoveAll(dir)
		}
	}
	return best
}

// carried is the schedule with only the kinds the spec's flavor plays, as it declares
// them (backend.Carries.Faults): a kill that also loses unsynced writes or tears the
// log's tail is a plain kill where the flavor plays kills only.
func carried(c backend.Carries, faults []nemesis.Fault) []nemesis.Fault {
	var out []nemesis.Fault
	for _, fl := range faults {
		switch {
		case c.Plays(fl.Kind):
		case (fl.Kind == nemesis.LoseUnsynced || fl.Kind == nemesis.TornTail) && c.Plays(nemesis.Kill):
			fl.Kind = nemesis.Kill
		default:
			continue
		}
		out = append(out, fl)
	}
	return out
}

func runCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", checkArgs+" [--out DIR] [--faults FILE] [overrides]", checkSummary, stderr)
	seeds := fs.Int("seeds", 20, "how many seeds to run, one short run each")
	from := fs.Uint64("from", 1, "first seed (a failure prints its seed: --from S --seeds 1 replays it, here or in sim check)")
	out := fs.String("out", filepath.Join("results", "check"), "where each seed's run directory goes (seed-S), and results.csv")
	shrink := fs.Bool("shrink", false, "for a failing seed, remove faults while the failure stays, and print the smallest schedule")
	converge := fs.Duration("converge", checkConverge, "how long after the load every server has to run, serve and reach the same zxid")
	faultsFile := fs.String("faults", "", "run this schedule (a faults.json a check wrote) instead of each seed's")
	cf := newCheckFlags(fs)
	sets := overrideFlags(fs)
	user := args // for the replay commands
	*sets = append(*sets, spec.Setting{Name: "crash-at", Value: "none"}, spec.Setting{Name: "warmup", Value: "0s"})
	rest := args
	if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
		rest = append([]string{"two-dc"}, rest...)
	}
	sp, err := specArg(fs, rest, sets)
	if err != nil {
		return err
	}
	chose := map[string]bool{}
	for _, s := range *sets {
		chose[s.Name] = true
	}
	// A check's run, as sim check's: short and lightly loaded unless chosen otherwise.
	var defaults []spec.Setting
	if !chose["duration"] {
		defaults = append(defaults, spec.Setting{Name: "duration", Value: sim.CheckDuration.String()})
	}
	if !chose["rate"] {
		defaults = append(defaults, spec.Setting{Name: "rate", Value: strconv.FormatFloat(sim.CheckLoad, 'f', -1, 64)})
	}
	if sp, err = sp.With(defaults...); err != nil {
		return err
	}
	if sp.Backend == "sim" {
		return errors.New("--backend sim: the simulator's executor is polebench sim check")
	}
	if sp.Duration < sim.MinCheckDuration {
		return fmt.Errorf("--duration %v: random schedules need at least %v", sp.Duration, sim.MinCheckDuration)
	}
	if *seeds < 1 {
		return fmt.Errorf("--seeds %d: want at least 1", *seeds)
	}
	topo, err := sp.Topology()
	if err != nil {
		return err
	}
	fixed, err := readFaults(*faultsFile)
	if err != nil {
		return err
	}
	if _, err := sim.Schedule(*cf.schedule, topo, *from, sp.Duration); err != nil {
		return err
	}
	schedule := func(seed uint64) []nemesis.Fault {
		if fixed != nil {
			return fixed
		}
		fs, _ := sim.Schedule(*cf.schedule, topo, seed, sp.Duration) // its name checked above
		if f, ok := backend.LookupFlavor(sp.Flavor); ok {
			return carried(f.Carries, fs)
		}
		return fs
	}
	broken, err := cf.brokenServers()
	if err != nil {
		return err
	}
	variants, err := cf.chosen()
	if err != nil {
		return err
	}
	if (broken != nil || variants != nil) && sp.Backend != backend.Local {
		return fmt.Errorf("--broken, --variants: --backend %s: only the %s backend's servers run in this process, where a server can be broken on purpose", sp.Backend, backend.Local)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	csvw, err := csvfile.Create(filepath.Join(*out, "results.csv"))
	if err != nil {
		return err
	}
	defer csvw.Close()
	csvw.Write([]string{"seed", "verdict", "faults", "kinds", "ok", "failed", "unknown", "lost_acknowledged", "linearizability", "seconds", "detail", "dir"})

	ctx, stop := signalContext()
	defer stop()
	c := &checker{sp: sp, out: *out, converge: *converge, broken: broken}
	if variants != nil {
		return c.power(ctx, stdout, variants, *from, *seeds, schedule)
	}
	line := progress.New(stdout)
	t0 := time.Now()
	var runs []checkRun
	counts := map[string]int{}
	replay := replayArgs(user, "from", "seeds", "shrink")
	errorsInARow := 0
	for i := range *seeds {
		if errorsInARow == 3 {
			line.Note("3 seeds in a row could not run: stopping (the last error is above)")
			break
		}
		seed := *from + uint64(i)
		faults := schedule(seed)
		dir := filepath.Join(*out, fmt.Sprintf("seed-%d", seed))
		os.RemoveAll(dir)
		el := time.Since(t0)
		eta := "?"
		if i > 0 {
			eta = (time.Duration(float64(el) / float64(i) * float64(*seeds-i))).Round(time.Second).String()
		}
		line.Update("check %s on %s: seed %d (%d of %d), %d failed, %v elapsed, ETA %s",
			sp.Name, sp.Backend, seed, i+1, *seeds, counts[verdictUnsafe]+counts[verdictStuck]+counts[verdictError], el.Round(time.Second), eta)
		r := c.run(ctx, seed, faults, dir)
		if ctx.Err() != nil {
			break
		}
		runs = append(runs, r)
		counts[r.verdict]++
		if r.verdict == verdictError {
			errorsInARow++
		} else {
			errorsInARow = 0
		}
		csvw.Write([]string{strconv.FormatUint(seed, 10), r.verdict, strconv.Itoa(len(faults)), kinds(faults),
			strconv.FormatInt(r.ok, 10), strconv.FormatInt(r.failed, 10), strconv.FormatInt(r.unknown, 10), strconv.Itoa(r.lost), r.lin,
			strconv.FormatFloat(r.took.Seconds(), 'f', 1, 64), errText(r.detail), dir})
		if r.verdict == verdictOK {
			if fixed == nil {
				os.RemoveAll(filepath.Join(dir, "data")) // the servers' files: only a failure's are worth keeping
			}
			continue
		}
		line.Note("seed %d %s: %v\n  schedule: %v\n  run directory: %s\n  replay: polebench check%s --from %d --seeds 1\n  in the simulator: polebench sim check%s --from %d --seeds 1",
			seed, strings.ToUpper(r.verdict), r.detail, faults, dir, replay, seed, simReplay(user), seed)
		if *shrink && r.verdict != verdictError {
			small := c.shrink(ctx, r, line) // its run wrote its faults.json, or it failed otherwise
			line.Note("  shrunk to %d faults: %v\n  run directory: %s\n  replay: polebench check%s --from %d --seeds 1 --faults %s",
				len(small.faults), small.faults, small.dir, replayArgs(user, "from", "seeds", "shrink", "faults"), seed, filepath.Join(small.dir, "faults.json"))
		}
	}
	line.Done()
	took := time.Since(t0)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "verdict\tseeds\n")
	for _, v := range []string{verdictOK, verdictUnsafe, verdictStuck, verdictError} {
		var which []string
		for _, r := range runs {
			if r.verdict == v && v != verdictOK {
				which = append(which, strconv.FormatUint(r.seed, 10))
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", v, counts[v], strings.Join(which, " "))
	}
	tw.Flush()
	perSeed := time.Duration(0)
	if len(runs) > 0 {
		perSeed = took / time.Duration(len(runs))
	}
	fmt.Fprintf(stdout, "check %s on %s: %d seeds from %d in %v (%v a seed): %d unsafe, %d stuck, %d errors; %s\n",
		sp.Name, sp.Backend, len(runs), *from, took.Round(time.Second), perSeed.Round(100*time.Millisecond),
		counts[verdictUnsafe], counts[verdictStuck], counts[verdictError], filepath.Join(*out, "results.csv"))
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d seeds", len(runs))
	}
	if n := counts[verdictUnsafe] + counts[verdictStuck] + counts[verdictError]; n > 0 {
		return fmt.Errorf("%d of %d seeds failed", n, len(runs))
	}
	return nil
}

// power prints the real cluster's power table (power), one seed at a time.
func (c *checker) power(ctx context.Context, stdout io.Writer, variants []replica.VariantInfo, from uint64, seeds int, schedule func(uint64) []nemesis.Fault) error {
	line := progress.New(stdout)
	t0 := time.Now()
	runs := 0
	run := func(ctx context.Context, broken map[int]replica.Variant, seed uint64, fs []nemesis.Fault) (string, error) {
		runs++
		cc := *c
		cc.broken = broken
		dir := filepath.Join(c.out, fmt.Sprintf("power-%d", runs))
		r := cc.run(ctx, seed, fs, dir)
		if r.verdict == verdictOK {
			os.RemoveAll(dir)
		}
		return r.verdict, r.detail
	}
	rows := power(ctx, variants, func(replica.VariantInfo) string { return "" }, from, seeds, 1, schedule, run, line)
	line.Done()
	printPower(stdout, rows)
	fmt.Fprintf(stdout, "check power on %s: %d variants, at most %d seeds each from %d, %d runs in %v\n", c.sp.Backend, len(rows), seeds, from, runs, time.Since(t0).Round(time.Second))
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

// replayArgs is args without the flags named in drop (and their values): what a
// replay command repeats of the check's own command line, each word after a space.
func replayArgs(args []string, drop ...string) string {
	var out strings.Builder
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if strings.HasPrefix(args[i], "-") && slices.Contains(drop, name) {
			if !hasValue && name != "shrink" && i+1 < len(args) {
				i++
			}
			continue
		}
		out.WriteString(" " + args[i])
	}
	return out.String()
}

// simReplay is what sim check takes of a check's command line: the spec, the
// overrides and --faults; not --backend (the simulator is one), --out (a real
// cluster's run directories), --converge (a real cluster's wait, which the simulator
// has no flag for), nor --from, --seeds and --shrink.
func simReplay(args []string) string {
	return replayArgs(args, "backend", "out", "converge", "from", "seeds", "shrink")
}

func kinds(fs []nemesis.Fault) string {
	var ks []string
	for _, f := range fs {
		k := string(f.Kind)
		if f.Shape != "" {
			k += ":" + strings.SplitN(f.Shape, ":", 2)[0]
		}
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return strings.Join(ks, " ")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	s := strings.ReplaceAll(err.Error(), "\n", "; ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// writeFaults writes schedule fs as the run directory's faults.json.
func writeFaults(dir string, fs []nemesis.Fault) error {
	b, err := json.MarshalIndent(fs, "", "  ")
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "faults.json"), b, 0o644)
	}
	if err != nil {
		return fmt.Errorf("write the schedule to %s: %w", filepath.Join(dir, "faults.json"), err)
	}
	return nil
}

// readFaults reads a fault schedule a check wrote (faults.json), for --faults; none
// without a path.
func readFaults(path string) ([]nemesis.Fault, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var fs []nemesis.Fault
	if err := json.Unmarshal(b, &fs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fs, nil
}
