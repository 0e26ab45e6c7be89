package main

import (
	"strings"
	"testing"

	"github.com/polebench/polebench/analysis"
)

// TestPrintAggregateHost: the repetitions' table says how many runs the host's
// verdict trusted, and says nothing of a host the runs did not measure.
func TestPrintAggregateHost(t *testing.T) {
	tests := []struct {
		name string
		host analysis.HostRuns
		want string // "": no host line
	}{
		{"all trusted", analysis.HostRuns{Runs: 5, Measured: 5, Trusted: 5}, "  host: trusted 5/5 (runs with every window trusted)\n"},
		{"some not", analysis.HostRuns{Runs: 5, Measured: 5, Trusted: 3}, "  host: trusted 3/5 (runs with every window trusted)\n"},
		{"simulated", analysis.HostRuns{Runs: 5}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printAggregate(&b, &analysis.Repetitions{N: tc.host.Runs, NewLeaders: map[int]int{4: tc.host.Runs}, Host: tc.host})
			if got := b.String(); strings.Contains(got, "host:") != (tc.want != "") || !strings.Contains(got, tc.want) {
				t.Errorf("printed:\n%s\nwant host line %q", got, tc.want)
			}
		})
	}
}
