package campaign

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/polebench/polebench/analysis"
)

// Row is one run of results.csv: its point, repetition and every numeric metric of
// its summary.json, flattened to dotted names (latency_ms.after.D1.mean, recovery_ms),
// and HostTrusted.
type Row struct {
	Point   Point
	Rep     int
	Metrics map[string]float64
}

// HostTrusted is results.csv's column for the host's verdict on a run: 1 when every
// window was trusted, 0 when one was not, empty when the run measured no host (the
// simulator). A point's mean of it in aggregate.json is the share of its runs trusted.
const HostTrusted = "host_trusted"

// PointHost counts the runs of point p among rows by the host's verdict on them.
func PointHost(rows []Row, p Point) analysis.HostRuns {
	var h analysis.HostRuns
	for _, r := range rows {
		if r.Point.Index == p.Index {
			v, measured := r.Metrics[HostTrusted]
			h.Add(v == 1, measured)
		}
	}
	return h
}

// HostLine says how many of the campaign's runs the host's verdict trusted, and
// names each point with a run it did not; "" when no run measured its host.
func HostLine(c *Campaign, rows []Row) string {
	var all analysis.HostRuns
	var points []string
	for _, p := range c.Points() {
		h := PointHost(rows, p)
		all.Runs, all.Measured, all.Trusted = all.Runs+h.Runs, all.Measured+h.Measured, all.Trusted+h.Trusted
		if h.Trusted < h.Runs && h.Measured > 0 {
			points = append(points, fmt.Sprintf("point %d (%s) %s", p.Index, settingsString(p.Settings), h))
		}
	}
	if all.Measured == 0 {
		return ""
	}
	line := "host (runs with every window trusted): " + all.String()
	if len(points) > 0 {
		line += "; " + strings.Join(points, "; ")
	}
	return line
}

// Flatten turns a summary.json into its numeric leaves by dotted path. The election
// zxids are identifiers, not measurements, and are left out.
func Flatten(summaryJSON []byte) (map[string]float64, error) {
	var v any
	if err := json.Unmarshal(summaryJSON, &v); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				if p == "election_zxids" {
					continue
				}
				walk(p, e)
			}
		case float64:
			out[prefix] = x
		case bool:
			if x {
				out[prefix] = 1
			} else {
				out[prefix] = 0
			}
		}
	}
	walk("", v)
	return out, nil
}

// finalWindow adds latency_ms.final.* and final_leader: the window under the leader
// a run ended with, and that leader: the placed one where a placement controller moved the leader, else the
// after window (Raft's winner, kept or never placed), so that placement policies
// compare as curves of one metric.
func finalWindow(m map[string]float64) {
	_, moved := m["transfer_ms"]
	from := "latency_ms.after."
	if l, ok := m[NewLeader]; ok {
		m[FinalLeader] = l
	}
	if moved {
		from = "latency_ms.placed."
		m[FinalLeader] = m["placed_leader"]
	}
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, from); ok {
			m["latency_ms.final."+rest] = v
		}
	}
}

// Rows reads every finished run of the campaign directory.
func Rows(dir string, c *Campaign) ([]Row, error) {
	var rows []Row
	for _, p := range c.Points() {
		for rep := 1; rep <= c.Repetitions; rep++ {
			rd := RunDir(dir, p, rep)
			if !Done(rd) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(rd, "summary.json"))
			if err != nil {
				return nil, fmt.Errorf("campaign: %w", err)
			}
			m, err := Flatten(b)
			if err != nil {
				return nil, fmt.Errorf("campaign: %s: %w", rd, err)
			}
			var sum analysis.Summary
			if err := json.Unmarshal(b, &sum); err != nil {
				return nil, fmt.Errorf("campaign: %s: %w", filepath.Join(rd, "summary.json"), err)
			}
			if trusted, measured := sum.Trusted(); measured {
				m[HostTrusted] = 0
				if trusted {
					m[HostTrusted] = 1
				}
			}
			finalWindow(m)
			rows = append(rows, Row{Point: p, Rep: rep, Metrics: m})
		}
	}
	return rows, nil
}

// Columns are results.csv's metric columns: every metric any run has, sorted.
func Columns(rows []Row) []string {
	set := map[string]bool{}
	for _, r := range rows {
		for k := range r.Metrics {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// PointAggregate is one point of aggregate.json.
type PointAggregate struct {
	Point    int                     `json:"point"`
	Settings map[string]string       `json:"settings"`
	Metrics  map[string]analysis.Agg `json:"metrics"` // mean, Student-t 95 % interval, n
}

// WriteResults writes results.csv and aggregate.json from the finished runs.
func WriteResults(dir string, c *Campaign) error {
	rows, err := Rows(dir, c)
	if err != nil {
		return err
	}
	cols := Columns(rows)
	f, err := os.Create(filepath.Join(dir, "results.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	head := []string{"point", "rep"}
	for _, a := range c.Vary {
		head = append(head, a.Field)
	}
	w.Write(append(head, cols...))
	for _, r := range rows {
		rec := []string{strconv.Itoa(r.Point.Index), strconv.Itoa(r.Rep)}
		for _, a := range c.Vary {
			rec = append(rec, r.Point.Value(a.Field))
		}
		for _, col := range cols {
			v, ok := r.Metrics[col]
			if !ok {
				rec = append(rec, "")
				continue
			}
			rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
		}
		w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	agg, err := Aggregate(c, rows)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(agg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "aggregate.json"), append(b, '\n'), 0o644)
}

// Aggregate summarises each point's runs, metric by metric.
func Aggregate(c *Campaign, rows []Row) ([]PointAggregate, error) {
	var out []PointAggregate
	for _, p := range c.Points() {
		vals := map[string][]float64{}
		for _, r := range rows {
			if r.Point.Index != p.Index {
				continue
			}
			for k, v := range r.Metrics {
				vals[k] = append(vals[k], v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		pa := PointAggregate{Point: p.Index, Settings: map[string]string{}, Metrics: map[string]analysis.Agg{}}
		for _, s := range p.Settings {
			pa.Settings[s.Name] = s.Value
		}
		for k, xs := range vals {
			a, err := analysis.Aggregate(xs)
			if err != nil {
				return nil, fmt.Errorf("campaign: point %d %s: %w", p.Index, k, err)
			}
			pa.Metrics[k] = a
		}
		out = append(out, pa)
	}
	return out, nil
}

// ReadResults reads a results.csv back: the rows by point (matched by index) and the
// metric columns. Figures are drawn from it alone.
func ReadResults(dir string, c *Campaign) ([]Row, error) {
	f, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("campaign: results.csv: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("campaign: results.csv is empty")
	}
	head := recs[0]
	first := 2 + len(c.Vary)
	if len(head) < first || head[0] != "point" || head[1] != "rep" {
		return nil, fmt.Errorf("campaign: results.csv: unexpected header %s", strings.Join(head, ","))
	}
	pts := c.Points()
	var rows []Row
	for i, rec := range recs[1:] {
		idx, err1 := strconv.Atoi(rec[0])
		rep, err2 := strconv.Atoi(rec[1])
		if err1 != nil || err2 != nil || idx < 1 || idx > len(pts) {
			return nil, fmt.Errorf("campaign: results.csv:%d: bad point or rep", i+2)
		}
		r := Row{Point: pts[idx-1], Rep: rep, Metrics: map[string]float64{}}
		for k := first; k < len(head) && k < len(rec); k++ {
			if rec[k] == "" {
				continue
			}
			v, err := strconv.ParseFloat(rec[k], 64)
			if err != nil {
				return nil, fmt.Errorf("campaign: results.csv:%d: %s: %w", i+2, head[k], err)
			}
			r.Metrics[head[k]] = v
		}
		rows = append(rows, r)
	}
	return rows, nil
}
