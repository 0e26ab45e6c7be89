package benchdata

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Night is one line of the history file (JSON lines): one nightly bench.json, with
// each metric's samples and median.
type Night struct {
	Date    time.Time              `json:"date"`
	Commit  string                 `json:"commit,omitempty"`
	Env     Env                    `json:"environment"`
	Metrics map[string]NightMetric `json:"metrics"`
}

// NightMetric is one metric of a night.
type NightMetric struct {
	Unit      string    `json:"unit"`
	Better    Better    `json:"better"`
	MinEffect MinEffect `json:"min_effect"`
	Samples   []float64 `json:"samples"`
	Median    float64   `json:"median"`
	// Deterministic: a simulated metric (Metric.Deterministic).
	Deterministic bool `json:"deterministic,omitempty"`
	// Host: the host's verdict on each sample's run (Metric.Host).
	Host []string `json:"host,omitempty"`
}

// NightOf is f as a line of the history; a zero date becomes now.
func NightOf(f *File) Night {
	n := Night{Date: f.Env.Date, Commit: f.Env.Commit, Env: f.Env, Metrics: map[string]NightMetric{}}
	if n.Date.IsZero() {
		n.Date = time.Now().UTC().Truncate(time.Second)
	}
	for _, m := range f.Metrics {
		if len(m.Samples) == 0 {
			continue
		}
		n.Metrics[m.Name] = NightMetric{Unit: m.Unit, Better: m.Better, MinEffect: m.MinEffect, Samples: m.Samples, Median: m.Median(), Deterministic: m.Deterministic, Host: m.Host}
	}
	return n
}

// AppendHistory appends f as one line to the history file at path, creating it (and
// its directory) if needed.
func AppendHistory(path string, f *File) error {
	b, err := json.Marshal(NightOf(f))
	if err != nil {
		return fmt.Errorf("benchdata: history: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("benchdata: history: %w", err)
	}
	h, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("benchdata: history: %w", err)
	}
	if _, err := h.Write(append(b, '\n')); err != nil {
		h.Close()
		return fmt.Errorf("benchdata: history: %w", err)
	}
	return h.Close()
}

// ReadHistory reads every night of a history file, oldest first (file order). A bad
// line is an error naming path:line. A missing file is an error wrapping
// os.ErrNotExist.
func ReadHistory(path string) ([]Night, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchdata: history: %w", err)
	}
	var nights []Night
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var n Night
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&n); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if n.Date.IsZero() || n.Metrics == nil {
			return nil, fmt.Errorf("%s:%d: a night needs a date and metrics", path, line)
		}
		for name, m := range n.Metrics {
			if err := checkHost(m.Host, len(m.Samples)); err != nil {
				return nil, fmt.Errorf("%s:%d: metric %s: %w", path, line, name, err)
			}
		}
		nights = append(nights, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nights, nil
}

// ErrNoBaseline says the history has no night to compare with.
var ErrNoBaseline = errors.New("the history has no night yet")

// Baseline is the last k nights of a history as one File to compare with: each
// metric's samples from those nights pooled, so its median (the "old" of Compare) is
// the median of the last k nights and the test sees the night-to-night spread. A
// deterministic metric keeps the samples of the last night that has it: pooling
// identical nights adds nothing, and a change is judged against the newest.
func Baseline(nights []Night, k int) (*File, error) {
	if k < 1 {
		return nil, fmt.Errorf("benchdata: baseline of %d nights", k)
	}
	if len(nights) == 0 {
		return nil, ErrNoBaseline
	}
	last := nights[max(0, len(nights)-k):]
	pooled := map[string]Metric{}
	for _, n := range last {
		for name, m := range n.Metrics {
			p := pooled[name]
			p.Name, p.Unit, p.Better, p.MinEffect, p.Deterministic = name, m.Unit, m.Better, m.MinEffect, m.Deterministic
			if m.Deterministic {
				p.Samples, p.Host = m.Samples, m.Host // nights are oldest first: the last one stays
			} else {
				// A night without verdicts (before the meter) pools as not measured.
				p.Host = measuredHost(append(padHost(p.Host, len(p.Samples)), padHost(m.Host, len(m.Samples))...))
				p.Samples = append(p.Samples, m.Samples...)
			}
			pooled[name] = p
		}
	}
	f := &File{Format: FormatVersion, Env: last[len(last)-1].Env}
	for _, name := range slices.Sorted(maps.Keys(pooled)) {
		f.Metrics = append(f.Metrics, pooled[name])
	}
	f.Env.Date = last[len(last)-1].Date
	return f, nil
}

// padHost is host with a "" (not measured) for each of n samples it lacks a verdict for.
func padHost(host []string, n int) []string {
	out := make([]string, n)
	copy(out, host)
	return out
}

// Comparable keeps the nights that may be a baseline for a night measured in cur: not
// planted (nightly --set), of the same suite (a night that names none matches any),
// and of the same length (--quick or not: shorter runs measure other windows). It
// returns how many it left out.
func Comparable(nights []Night, cur Env) (kept []Night, skipped int) {
	for _, n := range nights {
		if len(n.Env.Planted) > 0 || n.Env.Quick != cur.Quick || (n.Env.Suite != "" && cur.Suite != "" && n.Env.Suite != cur.Suite) {
			skipped++
			continue
		}
		kept = append(kept, n)
	}
	return kept, skipped
}
