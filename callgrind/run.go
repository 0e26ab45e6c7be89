package callgrind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// OutFile is the callgrind.out file Run leaves in its directory.
const OutFile = "callgrind.out"

// ErrNoValgrind says valgrind is not installed (scripts/install-deps.sh installs it).
var ErrNoValgrind = errors.New("valgrind is not installed (apt-get install valgrind; make deps)")

// Available says whether valgrind can be run.
func Available() error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return ErrNoValgrind
	}
	return nil
}

// Run runs argv under callgrind and reads the profile it leaves in dir. Go's scheduler is held still for callgrind: one P
// (GOMAXPROCS=1), so that the count is one thread's, and no asynchronous preemption,
// whose signal callgrind aborts on.
func Run(ctx context.Context, dir string, argv ...string) (*Profile, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, OutFile)
	args := append([]string{"--tool=callgrind", "--callgrind-out-file=" + out}, argv...)
	cmd := exec.CommandContext(ctx, "valgrind", args...)
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("valgrind %v: %w\n%s", argv, err, tail(stderr.Bytes(), 2000))
	}
	return ReadFile(out)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
