// Package backend names the cluster backends. It is a leaf so that the spec can check
// a backend name without importing the backends themselves (and, through them, the
// replica and its cores).
package backend

const (
	Local  = "local" // the embedded default: poled nodes in the harness process
	Netns  = "netns"
	Docker = "docker"
)

// Names lists every backend cluster.New knows.
func Names() []string { return []string{Local, Netns, Docker} }
