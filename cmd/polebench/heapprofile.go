package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// heapProfileEnv names a file for a heap profile of the command at its largest: what
// a campaign's memory peak is made of (go tool pprof -sample_index=inuse_space
// bin/polebench FILE). A profile at exit would show what is left, not the peak.
const heapProfileEnv = "POLEBENCH_HEAPPROFILE"

// watchHeap writes the heap profile to path each time the live heap (as the last
// collection marked it) is larger than any before, checking every interval.
func watchHeap(path string, interval time.Duration) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var most uint64
	for range time.Tick(interval) {
		metrics.Read(sample)
		if live := sample[0].Value.Uint64(); live > most {
			most = live
			if err := writeHeapProfile(path); err != nil {
				fmt.Fprintf(os.Stderr, "polebench: %s: %v\n", heapProfileEnv, err)
				return
			}
		}
	}
}

// writeHeapProfile collects first: without that the profile may be two collections
// old, which while a heap grows fast is far below its peak.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
