package image

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/stdcopy"
)

// hostProgram is a dynamically linked program of this host (coreutils' echo links
// libc), by its resolved path.
func hostProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skip(err)
	}
	if p, err = filepath.Abs(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProgram: the files Program packs for a dynamic program are the program, its
// interpreter and the objects the host's own loader maps for it (ldd), each with the
// host file's bytes; a static one is itself alone.
func TestProgram(t *testing.T) {
	echo := hostProgram(t, "echo")
	r, err := Program(echo)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, f := range r.Files {
		got[f.Path] = f.Data
	}
	out, err := exec.Command("ldd", echo).Output()
	if err != nil {
		t.Skipf("ldd: %v", err)
	}
	want := []string{echo}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 3 && fields[1] == "=>":
			want = append(want, fields[2]) // libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)
		case len(fields) == 2 && strings.HasPrefix(fields[0], "/"):
			want = append(want, fields[0]) // the interpreter
		}
	}
	if len(want) < 3 {
		t.Fatalf("ldd %s names %v: want the interpreter and libc at least", echo, want)
	}
	if paths := slices.Sorted(maps.Keys(got)); !slices.Equal(paths, slices.Sorted(slices.Values(want))) {
		t.Errorf("Program(%s) packs %v, ldd says %v", echo, paths, want)
	}
	for _, p := range want {
		host, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[p], host) {
			t.Errorf("%s: packed %d bytes, the host's file has %d", p, len(got[p]), len(host))
		}
	}
	if len(r.Env) != 1 || !strings.HasPrefix(r.Env[0], "LD_LIBRARY_PATH=/") {
		t.Errorf("Env %v: want LD_LIBRARY_PATH naming the libraries' directories", r.Env)
	}

	static := staticELF(t)
	if r, err := Program(static); err != nil || len(r.Files) != 1 || r.Env != nil {
		t.Errorf("Program(static) = %d files, env %v, %v: want the binary alone", len(r.Files), r.Env, err)
	}
	if _, err := Program("echo"); err == nil {
		t.Error("Program of a relative path: no error")
	}
}

// staticELF is a static executable: the test binary itself (CGO_ENABLED=0).
func staticELF(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if interp, err := interpreter(f); err != nil || interp != "" {
		t.Skipf("the test binary is dynamically linked (%q, %v): built with cgo", interp, err)
	}
	return self
}

// TestProgramRuns builds the image of the host's echo FROM scratch and runs it: the
// interpreter and libc it packs are all a dynamic program needs.
func TestProgramRuns(t *testing.T) {
	ctx := t.Context()
	cli, err := Connect(ctx)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("docker is required under CI: %v", err)
		}
		t.Skipf("no docker engine: %v", err)
	}
	defer cli.Close()
	echo := hostProgram(t, "echo")
	r, err := Program(echo)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	r.Repo, r.Entrypoint = "polebench/test-echo-"+hex.EncodeToString(nonce), []string{echo}
	tag, built, err := EnsureRoot(ctx, cli, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	if !built {
		t.Errorf("%s: not built, though its repository is new", tag)
	}
	if _, built, err := EnsureRoot(ctx, cli, r, nil); err != nil || built {
		t.Errorf("second EnsureRoot: built %v, %v; want it found", built, err)
	}
	name := "polebench-image-test-" + hex.EncodeToString(nonce)
	if _, err := cli.ContainerCreate(ctx, &container.Config{Image: tag, Cmd: []string{"from", "scratch"}}, nil, nil, nil, name); err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), name, container.RemoveOptions{Force: true})
	if err := cli.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitc, errc := cli.ContainerWait(ctx, name, container.WaitConditionNotRunning)
	select {
	case w := <-waitc:
		if w.StatusCode != 0 {
			t.Errorf("container exited with %d", w.StatusCode)
		}
	case err := <-errc:
		t.Fatal(err)
	}
	rc, err := cli.ContainerLogs(ctx, name, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if out.String() != "from scratch\n" {
		t.Errorf("container printed %q, want %q", out.String(), "from scratch\n")
	}
}
