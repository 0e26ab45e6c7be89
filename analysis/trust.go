package analysis

import "fmt"

// RunVerdict is the host's verdict on a run as a whole: the worst of its windows'
// verdicts (Trusted, Degraded, Untrusted), or "" when the run measured no host (the
// simulator, or a run directory from before the meter). A window without a verdict
// counts as untrusted: nothing says its numbers are the system's.
func (s *Summary) RunVerdict() string {
	if len(s.Host) == 0 {
		return ""
	}
	v := Trusted
	for _, h := range s.Host {
		switch {
		case h == nil || (h.Verdict != Trusted && h.Verdict != Degraded):
			return Untrusted
		case h.Verdict == Degraded:
			v = Degraded
		}
	}
	return v
}

// Trusted says whether the host's verdict on every window of the run was trusted,
// and whether the run measured its host at all: a run that did not is not trusted.
func (s *Summary) Trusted() (trusted, measured bool) {
	v := s.RunVerdict()
	return v == Trusted, v != ""
}

// HostRuns counts a set of runs (the repetitions of a run, a campaign's point, one
// side of a comparison) by the host's verdict on them.
type HostRuns struct {
	Runs     int `json:"runs"`
	Measured int `json:"measured"` // runs that measured their host
	Trusted  int `json:"trusted"`  // runs whose every window was trusted
}

// Add counts one run (Add(s.Trusted()) for a summary).
func (h *HostRuns) Add(trusted, measured bool) {
	h.Runs++
	if measured {
		h.Measured++
	}
	if measured && trusted {
		h.Trusted++
	}
}

// String is "trusted 3/5" (3 of the 5 measured runs), with the runs that measured
// no host named apart, or "host not measured" when none did.
func (h HostRuns) String() string {
	if h.Measured == 0 {
		return "host not measured"
	}
	s := fmt.Sprintf("trusted %d/%d", h.Trusted, h.Measured)
	if n := h.Runs - h.Measured; n > 0 {
		s += fmt.Sprintf(", %d not measured", n)
	}
	return s
}
