package benchdata

import (
	"context"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// HostEnv describes this machine and build: version is the binary's version string;
// the commit comes from the build's VCS stamp, else from `git rev-parse HEAD` in the
// working directory. The links are filled by Collect.
func HostEnv(ctx context.Context, version string) Env {
	e := Env{Date: time.Now().UTC().Truncate(time.Second), Version: version, CPUs: runtime.NumCPU(), Go: runtime.Version(), Commit: buildCommit()}
	if e.Commit == "" {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
			e.Commit = strings.TrimSpace(string(out))
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = strings.Join([]string{unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Machine[:])}, " ")
	}
	return e
}

func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
