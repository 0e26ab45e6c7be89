// Package progress shows long work as one live status line on a terminal and as plain,
// rate-limited lines when the output is a file or a pipe (no carriage returns or escape
// codes in a log).
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// PlainEvery is how often a piped Line writes an update; Note lines are never held back.
const PlainEvery = 10 * time.Second

// Line is a status line. The zero value is not usable; use New. Safe for concurrent use.
type Line struct {
	w    io.Writer
	live bool
	now  func() time.Time

	mu       sync.Mutex
	shown    bool // a live line is on screen
	lastSent time.Time
}

// New returns a Line writing to w: live when w is a terminal, plain otherwise.
// A nil w gives a Line that writes nothing.
func New(w io.Writer) *Line {
	return &Line{w: w, live: IsTerminal(w), now: time.Now}
}

// NewPlain returns a Line that writes plain lines whatever w is (tests, CI logs).
func NewPlain(w io.Writer) *Line { return &Line{w: w, now: time.Now} }

// IsTerminal says whether w is a character device such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Live says whether the line redraws in place.
func (l *Line) Live() bool { return l.live }

// Update replaces the status: redrawn in place on a terminal, at most one plain line
// per PlainEvery otherwise.
func (l *Line) Update(format string, a ...any) {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := fmt.Sprintf(format, a...)
	if l.live {
		fmt.Fprintf(l.w, "\r\033[K%s", msg)
		l.shown = true
		return
	}
	if now := l.now(); l.lastSent.IsZero() || now.Sub(l.lastSent) >= PlainEvery {
		fmt.Fprintln(l.w, msg)
		l.lastSent = now
	}
}

// Note writes a line that stays (a phase change, a finished step), above the live line.
func (l *Line) Note(format string, a ...any) {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live && l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
	fmt.Fprintf(l.w, format+"\n", a...)
	l.lastSent = l.now()
}

// Done ends the live line, leaving its last text on screen.
func (l *Line) Done() {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live && l.shown {
		fmt.Fprintln(l.w)
		l.shown = false
	}
}

// ETA estimates the time left from the fraction done so far; 0 when nothing is done.
func ETA(done, total float64, elapsed time.Duration) time.Duration {
	if done <= 0 || total <= done {
		return 0
	}
	return time.Duration(float64(elapsed) * (total - done) / done).Round(time.Second)
}

// Tally counts finished items out of a known total and estimates the time left from
// the pace of the items finished so far (wall-clock time since the tally started over
// the items done, so work done in parallel counts as it goes). Safe for concurrent use.
type Tally struct {
	mu          sync.Mutex
	total, done int
	start       time.Time
	now         func() time.Time
}

// NewTally starts a tally of total items now.
func NewTally(total int) *Tally { return newTally(total, time.Now) }

func newTally(total int, now func() time.Time) *Tally {
	return &Tally{total: total, start: now(), now: now}
}

// Finish counts one item done.
func (t *Tally) Finish() {
	t.mu.Lock()
	t.done++
	t.mu.Unlock()
}

// Counts returns the items done and the total.
func (t *Tally) Counts() (done, total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done, t.total
}

// Pace is the wall-clock time per finished item so far; false before the first.
func (t *Tally) Pace() (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == 0 {
		return 0, false
	}
	return t.now().Sub(t.start) / time.Duration(t.done), true
}

// ETA is the time left for the items not done at the pace so far; false before the
// first item finished.
func (t *Tally) ETA() (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == 0 {
		return 0, false
	}
	return ETA(float64(t.done), float64(t.total), t.now().Sub(t.start)), true
}

// ETAString is ETA as a line shows it: "ETA 1m30s", or "ETA after the first run"
// (named by what) before anything finished.
func ETAString(d time.Duration, known bool, what string) string {
	if !known {
		return "ETA after the first " + what
	}
	return "ETA " + d.Round(time.Second).String()
}
