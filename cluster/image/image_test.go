package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
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

func TestEnsureRejectsUnrunnable(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o755)
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	dynamic, err := exec.LookPath("true") // coreutils' true links libc dynamically
	if err != nil {
		t.Fatal(err)
	}
	for bin, want := range map[string]string{empty: "empty", script: "not an ELF", dynamic: "dynamically linked"} {
		if _, _, err := Ensure(t.Context(), nil, bin, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Ensure(%s): %v, want an error saying %q", filepath.Base(bin), err, want)
		}
	}
}

func TestBuildContext(t *testing.T) {
	r := poledRoot([]byte("\x7fELF fake"))
	sum, err := r.Hash()
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildContext(r, sum)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	var dockerfile, poled []byte
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
		data, _ := io.ReadAll(tr)
		switch h.Name {
		case "Dockerfile":
			dockerfile = data
		case "rootfs/poled":
			poled = data
		}
	}
	for name, mode := range map[string]int64{"rootfs/": 0o755, "rootfs/poled": 0o755, "rootfs/tmp/": 0o1777, "rootfs/etc/": 0o755, "rootfs/etc/poled/": 0o755, "rootfs/data/": 0o755} {
		if h := got[name]; h == nil || h.Mode != mode {
			t.Errorf("%s: %+v, want mode %o", name, h, mode)
		}
	}
	if string(poled) != "\x7fELF fake" {
		t.Errorf("rootfs/poled holds %q", poled)
	}
	for _, want := range []string{"FROM scratch\n", "LABEL " + HashLabel + "=" + sum, `ENTRYPOINT ["/poled"]`} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("Dockerfile lacks %q:\n%s", want, dockerfile)
		}
	}
	again, _ := buildContext(r, sum)
	if !bytes.Equal(b, again) {
		t.Error("the build context of one binary differs between calls")
	}
	if other, _ := poledRoot([]byte("\x7fELF other")).Hash(); other == sum {
		t.Error("two binaries' images hash alike")
	}
}

func TestReadBuildStream(t *testing.T) {
	for _, c := range []struct{ stream, err string }{
		{`{"stream":"Step 1/4 : FROM scratch\n"}{"stream":" ---\u003e \n"}{"aux":{"ID":"sha256:ab"}}`, ""},
		{`{"stream":"Step 2/4 : COPY rootfs/ /\n"}{"errorDetail":{"message":"COPY failed: no source files"},"error":"COPY failed: no source files"}`, "COPY failed: no source files (after: Step 2/4 : COPY rootfs/ /)"},
		{`{"stream":`, "reading build output"},
	} {
		err := readBuildStream(strings.NewReader(c.stream))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.stream, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.stream, err, c.err)
		}
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cluster", "image", "image.go")); err != nil {
		t.Errorf("ModuleRoot = %s: %v", root, err)
	}
	if _, err := ModuleRoot(t.TempDir()); err == nil {
		t.Error("ModuleRoot found a polebench tree in an empty temp dir")
	}
}

// TestEnsure builds an image from scratch through the engine for a binary nobody built
// before (a unique stamp makes its hash new), runs nothing, checks the image, and
// checks a second Ensure finds it instead of building again.
func TestEnsure(t *testing.T) {
	ctx := t.Context()
	cli, err := Connect(ctx)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("docker is required under CI: %v", err)
		}
		t.Skipf("no docker engine (install docker.io and start it): %v", err)
	}
	defer cli.Close()
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	bin := filepath.Join(t.TempDir(), "fakepoled")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-X main.nonce="+hex.EncodeToString(nonce), "-o", bin, "./cluster/image/testdata/fakepoled")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fakepoled: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := poledRoot(data).Hash()
	if err != nil {
		t.Fatal(err)
	}
	extra := Repo + ":test-" + hex.EncodeToString(nonce)
	tag, built, err := Ensure(ctx, cli, bin, nil, extra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, ref := range []string{extra, tag} {
			cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	})
	if !built || tag != Tag(Repo, sum) {
		t.Fatalf("Ensure = %s, built %v; want %s built", tag, built, Tag(Repo, sum))
	}
	info, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Labels[HashLabel] != sum || !slices.Equal(info.Config.Entrypoint, []string{BinaryPath}) || !slices.Contains(info.RepoTags, extra) {
		t.Errorf("image %s: labels %v, entrypoint %v, tags %v", tag, info.Config.Labels, info.Config.Entrypoint, info.RepoTags)
	}
	if len(info.RootFS.Layers) != 1 {
		t.Errorf("image %s has %d layers, want 1 (scratch plus the root fs)", tag, len(info.RootFS.Layers))
	}
	if _, built, err := Ensure(ctx, cli, bin, nil); err != nil || built {
		t.Fatalf("second Ensure: built %v, %v; want it found", built, err)
	}

	// The image runs: a static binary needs nothing from a base image.
	name := "polebench-image-test-" + hex.EncodeToString(nonce)
	if _, err := cli.ContainerCreate(ctx, &container.Config{Image: tag, Cmd: []string{"--config", "x"}}, nil, nil, nil, name); err != nil {
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
			t.Fatalf("container exited with %d", w.StatusCode)
		}
	case err := <-errc:
		t.Fatal(err)
	}
	rc, err := cli.ContainerLogs(ctx, name, container.LogsOptions{ShowStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, io.Discard, rc); err != nil {
		t.Fatal(err)
	}
	if want := "fakepoled " + hex.EncodeToString(nonce) + " [--config x]\n"; out.String() != want {
		t.Errorf("container printed %q, want %q", out.String(), want)
	}
}
