package zookeeper

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Down kills ZooKeeper JVMs a crashed harness left running on the host (the local
// backend's; the netns backend's die with their namespaces): those whose command line
// carries the label (any polebench label for "").
func Down(label string) ([]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := []byte(labelProp + label)
	var killed []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmd, []byte{0}) {
			if bytes.HasPrefix(arg, want) && (label == "" || len(arg) == len(want)) {
				if err := unix.Kill(pid, unix.SIGKILL); err == nil {
					killed = append(killed, fmt.Sprintf("zookeeper process %d (%s)", pid, arg[len(labelProp):]))
				}
				break
			}
		}
	}
	return killed, nil
}
