package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/polebench/polebench/cluster/backend"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
)

const modelSummary = "Print the analytic model for a spec: every live server's scores and the latency it would give as leader after the initial leader crashes, who each oracle elects, and the prediction before the crash"

func runModel(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model", "SPEC [--json] [--jitter-aware] [overrides]", modelSummary, stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	jitter := fs.Bool("jitter-aware", false, "also show the jitter-aware term: each DC's latency with the spec's jittered links (the quorum waits for the k-th fastest round trip; links deliver in order) at its rates")
	spec, err := specArg(fs, args, overrideFlags(fs))
	if err != nil {
		return err
	}
	p, err := spec.Model()
	if err != nil {
		return err
	}
	var jt *jitterModel
	if *jitter {
		if jt, err = jitterTerms(spec, p); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeModelJSON(stdout, spec, p, jt)
	}
	var buf bytes.Buffer
	if err := writeModelTable(&buf, spec, p); err != nil {
		return err
	}
	if jt != nil {
		if err := writeJitterTable(&buf, spec, p, jt); err != nil {
			return err
		}
	}
	_, err = stdout.Write(trimLines(buf.Bytes()))
	return err
}

// trimLines drops the trailing blanks tabwriter leaves after an empty last cell.
func trimLines(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	return bytes.Join(lines, []byte("\n"))
}

type jsonServer struct {
	ID          int                `json:"id"`
	DC          string             `json:"dc"`
	ThetaC      float64            `json:"theta_c_ms"`
	ThetaL      float64            `json:"theta_l_ms"`
	ThetaW      float64            `json:"theta_w_ms"`
	ThetaR      float64            `json:"theta_r"`
	LatencyByDC map[string]float64 `json:"latency_ms_by_dc"`
	Mean        float64            `json:"mean_latency_ms"`
	Worst       float64            `json:"worst_latency_ms"`
}

type jsonModel struct {
	Servers []jsonServer     `json:"servers"`
	Elected map[string]int   `json:"elected"`
	Ties    map[string][]int `json:"ties"`
	Before  jsonServer       `json:"before"`
	// FlavorCanWin: the servers the spec's flavor's own election may elect, if it
	// declares its rule (backend.Flavor.CanWin).
	FlavorCanWin []int `json:"flavor_can_win,omitempty"`
	// Jitter (with --jitter-aware): the jitter-aware latencies, before the crash and per
	// candidate after it.
	Jitter *jsonJitter `json:"jitter,omitempty"`
}

type jsonJitter struct {
	Before  jsonLeading   `json:"before"`
	Servers []jsonLeading `json:"servers"`
}

type jsonLeading struct {
	ID          int                `json:"id"`
	LatencyByDC map[string]float64 `json:"latency_ms_by_dc"`
	Mean        float64            `json:"mean_latency_ms"`
}

func toJSONLeading(l model.Leading) jsonLeading {
	by := map[string]float64{}
	for k, v := range l.LatencyByDC {
		by[k] = round3(v)
	}
	return jsonLeading{ID: l.Leader, LatencyByDC: by, Mean: round3(l.Mean)}
}

// round3 keeps JSON readable: a microsecond is far below what the model can claim.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func toJSON(c model.Candidate) jsonServer {
	by := map[string]float64{}
	for k, v := range c.LatencyByDC {
		by[k] = round3(v)
	}
	return jsonServer{
		ID: c.ID, DC: c.DC,
		ThetaC: round3(c.ThetaC), ThetaL: round3(c.ThetaL), ThetaW: round3(c.ThetaW), ThetaR: round3(c.ThetaR),
		LatencyByDC: by, Mean: round3(c.Mean), Worst: round3(c.Worst),
	}
}

func writeModelJSON(w io.Writer, s *spec.Spec, p *model.Prediction, jt *jitterModel) error {
	out := jsonModel{Elected: map[string]int{}, Ties: map[string][]int{}, Before: toJSON(p.Before)}
	if _, set := flavorCanWin(s, p); set != nil {
		out.FlavorCanWin = set
	}
	if jt != nil {
		out.Jitter = &jsonJitter{Before: toJSONLeading(jt.before.Leading(p.Before.ID))}
		for _, c := range p.After.Candidates {
			out.Jitter.Servers = append(out.Jitter.Servers, toJSONLeading(jt.after.Leading(c.ID)))
		}
	}
	for _, c := range p.After.Candidates {
		out.Servers = append(out.Servers, toJSON(c))
	}
	for _, e := range p.Elections {
		out.Elected[e.Oracle] = e.Leader
		if e.Tied != nil {
			out.Ties[e.Oracle] = e.Tied
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeModelTable(w io.Writer, s *spec.Spec, p *model.Prediction) error {
	t := p.After.Topo
	var dcs []string
	var rates []string
	for _, d := range t.DCs() {
		dcs = append(dcs, d.Name)
		ep := d.Endpoint
		if ep == "" {
			ep = "-"
		}
		var ids []string
		for _, id := range d.Servers {
			ids = append(ids, topology.Name(id))
		}
		rates = append(rates, fmt.Sprintf("  %-4s %-8s %-14s %7.1f req/s", d.Name, ep, strings.Join(ids, ","), t.Rates[d.Name]))
	}
	fmt.Fprintf(w, "%s (%s)\n", s.Name, s.File)
	fmt.Fprintf(w, "%d servers (quorum %d), intra-DC RTT %.2f ms, lambda_T %.1f req/s, oracle %s\n",
		t.N(), score.Quorum(t.N()), t.IntraRTT, t.LambdaT(), s.Oracle.Name)
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w, strings.Join(rates, "\n"))

	fmt.Fprintf(w, "\nBefore the crash: %s leads, all servers live (ms)\n", topology.Name(p.Before.ID))
	if err := candidateTable(w, dcs, []model.Candidate{p.Before}); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nAfter %s crashes at %v: each live server as leader (ms; theta_r in req/s)\n", topology.Name(s.InitialLeader), s.CrashAt)
	if err := candidateTable(w, dcs, p.After.Candidates); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nElected after the crash\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range p.Elections {
		c, _ := p.After.Candidate(e.Leader)
		note := ""
		if e.Tied != nil {
			var ids []string
			for _, id := range e.Tied {
				ids = append(ids, topology.Name(id))
			}
			note = "tie " + strings.Join(ids, " ") + ": highest id"
		}
		mark := ""
		if e.Oracle == s.Oracle.Name {
			mark = "*"
		}
		fmt.Fprintf(tw, "  %s%s\t%s\tmean %.2f\tworst %.2f\t%s\n", e.Oracle, mark, topology.Name(e.Leader), c.Mean, c.Worst, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "  (* the spec's oracle)\n"); err != nil {
		return err
	}
	return flavorTable(w, s, p)
}

// flavorCanWin is the spec's flavor's own election rule and whom it may elect after
// the crash (every survivor, the spec's zxids as their logs); nil if the flavor
// declares no rule.
func flavorCanWin(s *spec.Spec, p *model.Prediction) (backend.Flavor, []int) {
	f, ok := backend.LookupFlavor(s.Flavor)
	if !ok || f.CanWin == nil {
		return f, nil
	}
	var survivors []int
	for _, c := range p.After.Candidates {
		survivors = append(survivors, c.ID)
	}
	logs := map[int]uint64{}
	for id, z := range s.Zxids {
		logs[id] = z
	}
	return f, f.CanWin(survivors, p.After.Topo.N(), logs)
}

// flavorTable is what the flavor's own election may do after the crash: each server
// it may elect with its predicted latency, the runs' winners a distribution over them.
func flavorTable(w io.Writer, s *spec.Spec, p *model.Prediction) error {
	f, set := flavorCanWin(s, p)
	if f.CanWin == nil {
		return nil
	}
	fmt.Fprintf(w, "\nElected after the crash by flavor %s (%s): %d can win\n", f.Name, f.Rule, len(set))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, id := range set {
		c, _ := p.After.Candidate(id)
		fmt.Fprintf(tw, "  %s\t%s\tmean %.2f\tworst %.2f\n", topology.Name(id), c.DC, c.Mean, c.Worst)
	}
	return tw.Flush()
}

func candidateTable(w io.Writer, dcs []string, cs []model.Candidate) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"server", "DC", "theta_c", "theta_l", "theta_w", "theta_r"}
	for _, d := range dcs {
		head = append(head, "lat "+d)
	}
	head = append(head, "mean", "worst")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
	for _, c := range cs {
		row := []string{topology.Name(c.ID), c.DC,
			fmt.Sprintf("%.2f", c.ThetaC), fmt.Sprintf("%.2f", c.ThetaL), fmt.Sprintf("%.2f", c.ThetaW), fmt.Sprintf("%.1f", c.ThetaR)}
		for _, d := range dcs {
			if v, ok := c.LatencyByDC[d]; ok {
				row = append(row, fmt.Sprintf("%.2f", v))
			} else {
				row = append(row, "-")
			}
		}
		row = append(row, fmt.Sprintf("%.2f", c.Mean), fmt.Sprintf("%.2f", c.Worst))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// jitterModel is the jitter-aware term before and after the crash.
type jitterModel struct {
	before, after *model.JitterTerm
}

// jitterTerms runs the jitter-aware term on the spec's links (its first repetition's
// plan) for every server live, and for the servers left after the crash.
func jitterTerms(s *spec.Spec, p *model.Prediction) (*jitterModel, error) {
	t := p.After.Topo
	plan := s.Plan(t, s.Seed)
	var jt jitterModel
	var err error
	if jt.before, err = model.Jitter(t, t.Servers(), plan, 0); err != nil {
		return nil, fmt.Errorf("jitter term before the crash: %w", err)
	}
	if jt.after, err = model.Jitter(t, p.After.Live, plan, 0); err != nil {
		return nil, fmt.Errorf("jitter term after the crash: %w", err)
	}
	return &jt, nil
}

// writeJitterTable sets the jitter-aware latencies beside the plain ones.
func writeJitterTable(w io.Writer, s *spec.Spec, p *model.Prediction, jt *jitterModel) error {
	t := p.After.Topo
	fmt.Fprintf(w, "\nWith jitter (%.3g %% %s, in-order links at lambda_T %.0f req/s): latency per DC, plain -> jittered (ms)\n",
		s.Links.JitterPct, s.Links.Dist, t.LambdaT())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"leader", "when"}
	for _, d := range t.DCs() {
		head = append(head, "lat "+d.Name)
	}
	head = append(head, "mean")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	row := func(c model.Candidate, when string, term *model.JitterTerm) {
		j := term.Leading(c.ID)
		cells := []string{topology.Name(c.ID), when}
		for _, d := range t.DCs() {
			if v, ok := c.LatencyByDC[d.Name]; ok {
				cells = append(cells, fmt.Sprintf("%.2f -> %.2f", v, j.LatencyByDC[d.Name]))
			} else {
				cells = append(cells, "-")
			}
		}
		cells = append(cells, fmt.Sprintf("%.2f -> %.2f", c.Mean, j.Mean))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	row(p.Before, "before", jt.before)
	for _, c := range p.After.Candidates {
		row(c, "after", jt.after)
	}
	return tw.Flush()
}
