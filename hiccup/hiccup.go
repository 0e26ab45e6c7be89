// Package hiccup measures how late a process gets to run, jHiccup's way: a loop sleeps
// a fixed interval and records how much later than asked it woke. Whatever held it
// (the host's scheduler giving the CPU to another process, the Go runtime's garbage
// collector, the kernel) held every other goroutine of the process too, so what the
// loop records is a floor under what any request through the process waited that is
// not the system's. Each wake later than the threshold is also kept as a Stall, with
// its start and length, so that a run can tell which requests a stall overlapped.
package hiccup

import (
	"context"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Defaults: a 1 ms sleep, as jHiccup's, and stalls from 1 ms of lateness on.
const (
	DefaultInterval  = time.Millisecond
	DefaultThreshold = time.Millisecond
	// maxStalls bounds the stalls kept (16 bytes each): a host so loaded that every
	// wake stalls fills it in minutes; later stalls are only counted.
	maxStalls = 1 << 20
)

// Stall is a span in which the process did not run: from when the loop should have
// woken, for as long as it woke late.
type Stall struct {
	Start int64 `json:"start_ns"` // Unix nanoseconds
	Len   int64 `json:"len_ns"`
}

// End is when the stall ended, Unix nanoseconds.
func (s Stall) End() int64 { return s.Start + s.Len }

// Report is what a meter recorded: the histogram of every wake's lateness and the
// stalls, over [From, To).
type Report struct {
	Process   string                 `json:"process"`
	From      int64                  `json:"from_ns"` // Unix nanoseconds
	To        int64                  `json:"to_ns"`
	Interval  int64                  `json:"interval_ns"`
	Threshold int64                  `json:"threshold_ns"`
	Hist      *hdrhistogram.Snapshot `json:"hist"`   // lateness of every wake, ns
	Stalls    []Stall                `json:"stalls"` // wakes later than Threshold, in order
	Dropped   int64                  `json:"dropped,omitempty"`
}

// Histogram is the report's lateness histogram.
func (r Report) Histogram() *hdrhistogram.Histogram {
	if r.Hist == nil {
		return newHist()
	}
	return hdrhistogram.Import(r.Hist)
}

// Meter is one process's hiccup meter. Its zero value is not usable; see New.
type Meter struct {
	interval, threshold time.Duration

	mu      sync.Mutex
	from    int64
	to      int64
	hist    *hdrhistogram.Histogram
	stalls  []Stall
	dropped int64
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Minute), 3) // ns, up to a minute
}

// New returns a meter that sleeps interval and keeps wakes later than threshold as
// stalls (zero: the defaults).
func New(interval, threshold time.Duration) *Meter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if threshold <= 0 {
		threshold = DefaultThreshold
	}
	return &Meter{interval: interval, threshold: threshold, hist: newHist()}
}

// Run measures until ctx ends. It is meant to run on a goroutine of its own, once.
func (m *Meter) Run(ctx context.Context) {
	t := time.NewTimer(m.interval)
	defer t.Stop()
	due := time.Now().Add(m.interval)
	m.mu.Lock()
	m.from = due.UnixNano()
	m.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// Now, not the timer's stamp: how long this goroutine waited to run after
			// the timer fired is part of what it measures.
			m.Record(due.UnixNano(), time.Since(due))
			due = time.Now().Add(m.interval)
			t.Reset(m.interval)
		}
	}
}

// Record adds one wake, due at Unix nanoseconds due and late by late.
func (m *Meter) Record(due int64, late time.Duration) {
	late = max(late, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.from == 0 {
		m.from = due
	}
	m.to = due + int64(late)
	m.hist.RecordValue(int64(late))
	if late < m.threshold {
		return
	}
	if len(m.stalls) >= maxStalls {
		m.dropped++
		return
	}
	m.stalls = append(m.stalls, Stall{Start: due, Len: int64(late)})
}

// Report returns what the meter recorded so far, under the process's name.
func (m *Meter) Report(process string) Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Report{Process: process, From: m.from, To: m.to, Interval: int64(m.interval), Threshold: int64(m.threshold),
		Hist: m.hist.Export(), Stalls: append([]Stall(nil), m.stalls...), Dropped: m.dropped}
}
