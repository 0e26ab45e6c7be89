package backend_test

import (
	"testing"

	"github.com/polebench/polebench/spec"
)

// A backend or a flavor is its declaration: the spec checks these fake ones (this
// test binary's, registered in backend_test.go) with nothing of theirs written in
// package spec.
func TestSpecReadsDeclarations(t *testing.T) {
	const base = `name: t
datacenters:
  - {name: D1, endpoint: tud, servers: [1, 2]}
  - {name: D2, endpoint: cern, servers: [3, 4, 5]}
rates: {total: 1000}
initial_leader: 5
duration: 120s
crash_at: 60s
`
	for _, tc := range []struct{ yaml, want string }{
		{"backend: fake-kernel\nflavor: fake-flavor\nfaults:\n  - {at: 1s, kill: 2}\n  - {at: 2s, partition: [[1, 2], [3, 4, 5]]}\n",
			"x.yaml:13: faults[1]: flavor fake-flavor: only kill, restart, pause and resume faults (it has no admin port)"},
		{"backend: fake-b\nflavor: fake-flavor\n", `x.yaml:9: backend: flavor fake-flavor runs on the fake-kernel backends, not "fake-b"`},
		{"backend: fake-kernel\nfaults:\n  - {at: 1s, pause: 2}\n  - {at: 2s, resume: 2}\n",
			"x.yaml:11: faults[0].pause: the fake-kernel backend does not play pause faults: no pids"},
		{"backend: fake-b\nfaults:\n  - {at: 1s, slow_disk: {server: 2, delay: 1ms}}\n",
			"x.yaml:11: faults[0].slow_disk: the fake-b backend does not play slow-disk faults: it does not declare it (docs/backends.md)"},
		{"backend: fake-b\nlinks:\n  pairs:\n    - between: [D1, D2]\n      schedule:\n        - {at: 20s, rtt_ms: 5}\n",
			"x.yaml:13: links.pairs[0].schedule: the fake-b backend does not change links during a run yet (fake-kernel do)"},
		{"backend: fake-b\nlinks:\n  default:\n    loss: 1\n", "x.yaml:12: links.default.loss: the fake-b backend's links lose nothing"},
		{"backend: fake-sim\nlinks:\n  default:\n    reorder: 1\n",
			"x.yaml:12: links.default.reorder: the fake-sim backend's links are user space, carrying TCP streams, which deliver in order (use fake-kernel for kernel netem)"},
	} {
		_, err := spec.Parse("x.yaml", []byte(base+tc.yaml))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got: %v\nwant: %s", tc.yaml, err, tc.want)
		}
	}
	// What the declarations allow passes: a kernel backend's reordering.
	if _, err := spec.Parse("x.yaml", []byte(base+"backend: fake-kernel\nlinks:\n  default:\n    reorder: 1\n")); err != nil {
		t.Errorf("reorder on a kernel backend: %v", err)
	}
}
