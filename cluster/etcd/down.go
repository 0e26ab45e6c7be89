package etcd

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polebench/polebench/cluster/internal/procs"
)

// shmPrefix starts the name of a cluster's data directory on tmpfs, followed by its
// label and a dash.
const shmPrefix = "polebench-etcd-"

// Down kills etcd members a crashed harness left running (those whose
// --initial-cluster-token names the label; any polebench label for "") and removes
// their data directories on tmpfs.
func Down(label string) ([]string, error) {
	want := []byte(tokenPrefix + label)
	removed, err := procs.KillByArgs("etcd", func(args [][]byte) (string, bool) {
		i := slices.IndexFunc(args, func(a []byte) bool { return string(a) == "--initial-cluster-token" })
		if i < 0 || i+1 >= len(args) || !bytes.HasPrefix(args[i+1], want) || (label != "" && len(args[i+1]) != len(want)) {
			return "", false
		}
		return string(args[i+1][len(tokenPrefix):]), true
	})
	if err != nil {
		return removed, err
	}
	dirs, err := filepath.Glob(filepath.Join(shmRoot, shmPrefix+"*"))
	if err != nil {
		return removed, err
	}
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), shmPrefix)
		if i := strings.LastIndexByte(rest, '-'); label != "" && (i < 0 || rest[:i] != label) {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			return removed, err
		}
		removed = append(removed, "etcd data "+d)
	}
	return removed, nil
}
