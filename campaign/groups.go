package campaign

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
)

// NewLeader is results.csv's column of the leader a run elected after the crash;
// FinalLeader the leader it ended with (the placed one where a placement controller
// moved the leader, else NewLeader), who led its final window.
const (
	NewLeader   = "new_leader"
	FinalLeader = "final_leader"
)

// LeaderColumn is the column that says who led the window a metric is of: the
// placed and final windows were led by the leader the run ended with, every other
// by Raft's (or the oracle's) winner.
func LeaderColumn(metric string) string {
	if strings.Contains(metric, ".placed.") || strings.Contains(metric, ".final.") {
		return FinalLeader
	}
	return NewLeader
}

// Group is the runs of one point that elected the same leader. Repetitions that
// elected different leaders measured different systems (p2 leading, then p4 leading),
// so the report and the figures never average them together: each group is a row and
// a point of its own, with its count.
type Group struct {
	Point  Point
	Leader int   // 0: the runs recorded no new leader (no crash, or none elected)
	Rows   []Row // the group's runs, by repetition
	Of     int   // the point's runs in all
}

// Split says whether the point's runs elected more than one leader.
func (g Group) Split() bool { return len(g.Rows) < g.Of }

// Agg aggregates a metric over the group's runs; nil when none has it.
func (g Group) Agg(metric string) *analysis.Agg {
	var xs []float64
	for _, r := range g.Rows {
		if v, ok := r.Metrics[metric]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	a, err := analysis.Aggregate(xs)
	if err != nil {
		return nil
	}
	return &a
}

// Reps are the group's repetitions.
func (g Group) Reps() []int {
	out := make([]int, len(g.Rows))
	for i, r := range g.Rows {
		out[i] = r.Rep
	}
	return out
}

// Who names the group's leader with its share of the point's runs when the point's
// runs split: "p4", or "p2 in 3 of 5 runs"; "" without a leader.
func (g Group) Who() string {
	if g.Leader == 0 {
		return ""
	}
	if g.Split() {
		return fmt.Sprintf("p%d in %d of %d runs", g.Leader, len(g.Rows), g.Of)
	}
	return fmt.Sprintf("p%d", g.Leader)
}

// Representative is the group's run whose metric is the median of the group's (the
// lower middle one for an even count), or its first run when none has the metric.
func (g Group) Representative(metric string) Row {
	rows := slices.Clone(g.Rows)
	slices.SortStableFunc(rows, func(a, b Row) int { return cmp.Compare(a.Metrics[metric], b.Metrics[metric]) })
	return rows[(len(rows)-1)/2]
}

// Groups splits the runs of point p by the leader that led metric's window
// (LeaderColumn): the most common leader first (ties: the lower id).
func Groups(rows []Row, p Point, metric string) []Group {
	col := LeaderColumn(metric)
	by := map[int][]Row{}
	n := 0
	for _, r := range rows {
		if r.Point.Index != p.Index {
			continue
		}
		n++
		l := int(r.Metrics[col])
		by[l] = append(by[l], r)
	}
	var out []Group
	for l, rs := range by {
		slices.SortFunc(rs, func(a, b Row) int { return a.Rep - b.Rep })
		out = append(out, Group{Point: p, Leader: l, Rows: rs})
	}
	for i := range out {
		out[i].Of = n
	}
	slices.SortFunc(out, func(a, b Group) int {
		if c := cmp.Compare(len(b.Rows), len(a.Rows)); c != 0 {
			return c
		}
		return a.Leader - b.Leader
	})
	return out
}

// Ties is the model's election of a point: whom the model elects, and every server
// whose score lies within the jitter's reach of the winner's, the winner included.
type Ties struct {
	Oracle  string
	Model   int
	Servers []int // sorted; just Model when nothing ties
}

// Tied says whether the model's election is a tie.
func (t Ties) Tied() bool { return len(t.Servers) > 1 }

func (t Ties) String() string {
	parts := make([]string, len(t.Servers))
	for i, s := range t.Servers {
		parts[i] = fmt.Sprintf("p%d", s)
	}
	return strings.Join(parts, "/")
}

// ModelTies elects with the spec's oracle in the model, and widens the winner to a tie
// where the scores are measured: servers whose theta_c, theta_l or theta_w (consensus,
// latency, worst-case) differ from the winner's by no more than the links' jitter
// (jitter_pct % of the larger score; each RTT in a score jitters by that share of
// itself) can each come out best in a run, and the request oracle's exactly equal
// rates likewise. History, rotating and a preference list break their ties by id,
// which is no measurement: they tie with no one.
func ModelTies(sp *spec.Spec) (Ties, error) {
	pred, err := sp.Model()
	if err != nil {
		return Ties{}, err
	}
	t := Ties{Oracle: sp.Oracle.Name}
	for _, e := range pred.Elections {
		if e.Oracle != sp.Oracle.Name {
			continue
		}
		t.Model = e.Leader
		t.Servers = []int{e.Leader}
		var scoreOf func(id int) (float64, bool)
		switch e.Oracle {
		case score.Consensus, score.Latency, score.WorstCase:
			scoreOf = func(id int) (float64, bool) {
				c, ok := pred.After.Candidate(id)
				switch e.Oracle {
				case score.Consensus:
					return c.ThetaC, ok
				case score.Latency:
					return c.ThetaL, ok
				}
				return c.ThetaW, ok
			}
		case score.Request:
			t.Servers = append(t.Servers, e.Tied...)
		}
		if scoreOf != nil {
			best, _ := scoreOf(e.Leader)
			for _, c := range pred.After.Candidates {
				s, _ := scoreOf(c.ID)
				if math.Abs(s-best) <= sp.Links.JitterPct/100*math.Max(s, best) {
					t.Servers = append(t.Servers, c.ID)
				}
			}
		}
		slices.Sort(t.Servers)
		t.Servers = slices.Compact(t.Servers)
		return t, nil
	}
	return Ties{}, fmt.Errorf("the model has no election with oracle %s", sp.Oracle.Name)
}

// Winner compares the leader a group of runs elected with the model's: "yes (p4)",
// "tie: p2/p3/p4, p2 elected" (the model's scores tie within the jitter's reach),
// "yes (p3, ahead at the crash)" (history, with a proposal in flight at the kill that
// put another server ahead, which the runs' election zxids show), or
// "no: p1 elected, model p4".
func (c *Campaign) Winner(dir string, g Group) (verdict string, same bool, err error) {
	if g.Leader == 0 {
		return "-", false, nil
	}
	sp, err := c.SpecFor(g.Point, g.Rows[0].Rep)
	if err != nil {
		return "", false, err
	}
	t, err := ModelTies(sp)
	if err != nil {
		return "", false, err
	}
	switch {
	case t.Tied() && slices.Contains(t.Servers, g.Leader):
		return fmt.Sprintf("tie: %s, p%d elected", t, g.Leader), true, nil
	case g.Leader == t.Model:
		return fmt.Sprintf("yes (p%d)", g.Leader), true, nil
	case t.Oracle == score.History && dir != "" && historyAhead(dir, sp, g):
		return fmt.Sprintf("yes (p%d, ahead at the crash)", g.Leader), true, nil
	case t.Tied():
		return fmt.Sprintf("no: p%d elected, model tie %s", g.Leader, t), false, nil
	}
	return fmt.Sprintf("no: p%d elected, model p%d", g.Leader, t.Model), false, nil
}

// historyAhead says whether, in every run of the group, history had to elect the
// group's leader from the zxids the servers proposed with (summary.json's
// election_zxids).
func historyAhead(dir string, sp *spec.Spec, g Group) bool {
	for _, r := range g.Rows {
		b, err := os.ReadFile(filepath.Join(RunDir(dir, g.Point, r.Rep), "summary.json"))
		if err != nil {
			return false
		}
		var s analysis.Summary
		if json.Unmarshal(b, &s) != nil || len(s.ElectionZxids) == 0 {
			return false
		}
		if l, err := sp.HistoryElects(s.ElectionZxids); err != nil || l != g.Leader {
			return false
		}
	}
	return true
}
