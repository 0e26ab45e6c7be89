package etcd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// shmPrefix starts the name of a cluster's data directory on tmpfs, followed by its
// label and a dash.
const shmPrefix = "polebench-etcd-"

// Down kills etcd members a crashed harness left running (those whose
// --initial-cluster-token names the label; any polebench label for "") and removes
// their data directories on tmpfs.
func Down(label string) ([]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := []byte(tokenPrefix + label)
	var removed []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := bytes.Split(cmd, []byte{0})
		for i, arg := range args {
			if string(arg) != "--initial-cluster-token" || i+1 >= len(args) {
				continue
			}
			tok := args[i+1]
			if bytes.HasPrefix(tok, want) && (label == "" || len(tok) == len(want)) {
				if err := unix.Kill(pid, unix.SIGKILL); err == nil {
					removed = append(removed, fmt.Sprintf("etcd process %d (%s)", pid, tok[len(tokenPrefix):]))
				}
			}
			break
		}
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
