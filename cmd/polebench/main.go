// Command polebench is the harness CLI: it runs experiment specs against a replicated
// coordination service and compares what it measures with the analytic model.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

// profileEnv names a file for a CPU profile of the whole command: how the harness's
// own time is found (go tool pprof bin/polebench FILE).
const profileEnv = "POLEBENCH_CPUPROFILE"

func main() {
	if path := os.Getenv(heapProfileEnv); path != "" {
		go watchHeap(path, 250*time.Millisecond)
	}
	if path := os.Getenv(profileEnv); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "polebench: %s: %v\n", profileEnv, err)
			os.Exit(1)
		}
		code := run(os.Args[1:], os.Stdout, os.Stderr)
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
