package procs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster"
)

// Poled returns $POLEBENCH_POLED (cluster.PoledEnv), or builds ./cmd/poled of the
// enclosing source tree once per process. The build lands in the temp directory under
// a name holding its content hash, so rebuilding unchanged sources reuses the file.
func Poled(ctx context.Context, log *slog.Logger) (string, error) {
	if p := os.Getenv(cluster.PoledEnv); p != "" {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", cluster.PoledEnv, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s is not an executable file", cluster.PoledEnv, p)
		}
		return filepath.Abs(p)
	}
	built.Lock()
	defer built.Unlock()
	if built.path != "" {
		return built.path, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("no poled binary: set %s, or run inside the polebench source tree (%w)", cluster.PoledEnv, err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go toolchain to build poled: set %s to a poled binary", cluster.PoledEnv)
	}
	tmp, err := os.MkdirTemp("", "polebench-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	t0 := time.Now()
	out := filepath.Join(tmp, "poled")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/poled")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/poled in %s: %w\n%s", root, err, strings.TrimSpace(string(b)))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	final := filepath.Join(os.TempDir(), "polebench-poled-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(final); err != nil {
		if err := os.Rename(out, final); err != nil {
			return "", err
		}
	}
	if log != nil {
		log.Info("built poled", "path", final, "took", time.Since(t0).Round(time.Millisecond))
	}
	built.path = final
	return final, nil
}

var built struct {
	sync.Mutex
	path string
}

// moduleRoot finds the polebench module's directory above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/polebench/polebench\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/polebench/polebench above the working directory")
		}
		dir = parent
	}
}
