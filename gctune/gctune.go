// Package gctune makes Go's collector run rarely while the harness holds a large,
// busy heap of its own (a local cluster's replicas, or the simulator's servers): GOGC
// 400 under a soft memory limit of half the machine's memory. A collector's work is
// about the bytes allocated over GOGC, so a fifth of the cycles is about a fifth of
// their work; the limit keeps the heap's peak where the machine can hold it. GOGC or
// GOMEMLIMIT set in the environment are left alone.
package gctune

import (
	"bufio"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// Percent is the GC percent while a Rare is held.
const Percent = 400

var state struct {
	sync.Mutex
	users      int
	set        bool  // GOGC and the memory limit were set, to restore
	savedGC    int   // the GC percent before
	savedLimit int64 // the memory limit before
}

// Rare sets the rarer collection until release is called; overlapping holders share
// it, the last release restores what was before.
func Rare() (release func()) {
	s := &state
	s.Lock()
	defer s.Unlock()
	if s.users == 0 {
		s.set = os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == ""
		if s.set {
			s.savedGC = debug.SetGCPercent(Percent)
			s.savedLimit = debug.SetMemoryLimit(halfTheMemory())
		}
	}
	s.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.Lock()
			defer s.Unlock()
			if s.users--; s.users == 0 && s.set {
				debug.SetGCPercent(s.savedGC)
				debug.SetMemoryLimit(s.savedLimit)
			}
		})
	}
}

// halfTheMemory is half of MemTotal, bytes; no limit where /proc/meminfo says nothing.
func halfTheMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return math.MaxInt64
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil && kb > 0 {
				return kb * 1024 / 2
			}
		}
	}
	return math.MaxInt64
}
