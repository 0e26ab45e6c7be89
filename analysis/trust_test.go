package analysis

import "testing"

// TestRunVerdict judges whole runs from their windows' verdicts, and counts them.
func TestRunVerdict(t *testing.T) {
	w := func(v string) *HostWindow { return &HostWindow{Verdict: v} }
	tests := []struct {
		name              string
		host              map[string]*HostWindow
		verdict           string
		trusted, measured bool
	}{
		{"simulated: no host", nil, "", false, false},
		{"every window trusted", map[string]*HostWindow{"before": w(Trusted), "after": w(Trusted)}, Trusted, true, true},
		{"one window trusted (no after window)", map[string]*HostWindow{"before": w(Trusted)}, Trusted, true, true},
		{"one degraded", map[string]*HostWindow{"before": w(Trusted), "after": w(Degraded)}, Degraded, false, true},
		{"degraded and untrusted", map[string]*HostWindow{"before": w(Untrusted), "after": w(Degraded)}, Untrusted, false, true},
		{"a window without a verdict", map[string]*HostWindow{"before": w(Trusted), "after": nil}, Untrusted, false, true},
		{"an unknown verdict", map[string]*HostWindow{"before": w("fine")}, Untrusted, false, true},
	}
	var all HostRuns
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Summary{Host: tc.host}
			if v := s.RunVerdict(); v != tc.verdict {
				t.Errorf("RunVerdict %q, want %q", v, tc.verdict)
			}
			if tr, m := s.Trusted(); tr != tc.trusted || m != tc.measured {
				t.Errorf("Trusted (%v, %v), want (%v, %v)", tr, m, tc.trusted, tc.measured)
			}
		})
		all.Add((&Summary{Host: tc.host}).Trusted())
	}
	if want := (HostRuns{Runs: 7, Measured: 6, Trusted: 2}); all != want {
		t.Errorf("counted %+v, want %+v", all, want)
	}
	for _, c := range []struct {
		h    HostRuns
		want string
	}{
		{HostRuns{Runs: 5, Measured: 5, Trusted: 3}, "trusted 3/5"},
		{HostRuns{Runs: 5, Measured: 4, Trusted: 4}, "trusted 4/4, 1 not measured"},
		{HostRuns{Runs: 3}, "host not measured"},
		{HostRuns{}, "host not measured"},
	} {
		if s := c.h.String(); s != c.want {
			t.Errorf("%+v: %q, want %q", c.h, s, c.want)
		}
	}
}

// TestAggregateRunsHost: the repetitions' aggregate counts the runs the host's verdict
// trusted, and a simulated run is never one of them.
func TestAggregateRunsHost(t *testing.T) {
	lat := map[string]map[string]LatencyStats{"before": {"D1": {Count: 1, Mean: 21, P99: 25}}}
	trusted := map[string]*HostWindow{"before": {Verdict: Trusted}, "after": {Verdict: Trusted}}
	degraded := map[string]*HostWindow{"before": {Verdict: Trusted}, "after": {Verdict: Degraded}}
	tests := []struct {
		name  string
		hosts []map[string]*HostWindow
		want  HostRuns
	}{
		{"all trusted", []map[string]*HostWindow{trusted, trusted, trusted}, HostRuns{Runs: 3, Measured: 3, Trusted: 3}},
		{"one degraded", []map[string]*HostWindow{trusted, degraded, trusted}, HostRuns{Runs: 3, Measured: 3, Trusted: 2}},
		{"simulated", []map[string]*HostWindow{nil, nil}, HostRuns{Runs: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sums []*Summary
			for _, h := range tc.hosts {
				sums = append(sums, &Summary{LatencyMS: lat, Host: h})
			}
			r, err := AggregateRuns(sums)
			if err != nil {
				t.Fatal(err)
			}
			if r.Host != tc.want {
				t.Errorf("host %+v, want %+v", r.Host, tc.want)
			}
		})
	}
}
