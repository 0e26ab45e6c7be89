package zookeeper

import (
	"bytes"

	"github.com/polebench/polebench/cluster/internal/procs"
)

// Down kills ZooKeeper JVMs a crashed harness left running on the host (the local
// backend's; the netns backend's die with their namespaces): those whose command line
// carries the label (any polebench label for "").
func Down(label string) ([]string, error) {
	want := []byte(labelProp + label)
	return procs.KillByArgs("zookeeper", func(args [][]byte) (string, bool) {
		for _, arg := range args {
			if bytes.HasPrefix(arg, want) && (label == "" || len(arg) == len(want)) {
				return string(arg[len(labelProp):]), true
			}
		}
		return "", false
	})
}
