// Package image builds the poled container image locally: a static binary in an image
// FROM scratch, built through the Docker Engine API from a tar context made here. No
// registry and no base image is needed. The tag is the binary's content hash, so an
// unchanged binary is never rebuilt.
package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
)

// Repo is the repository every poled image is tagged in.
const Repo = "polebench/poled"

// Latest is the tag docker-compose.yml runs.
const Latest = Repo + ":latest"

// HashLabel holds the full sha256 of the binary inside an image.
const HashLabel = "polebench.poled.sha256"

// Paths inside the image.
const (
	BinaryPath = "/poled"
	ConfigDir  = "/etc/poled" // backends copy poled.json (and a link plan) here
	DataDir    = "/data"      // backends mount the server's volume here
)

// Connect returns a client for the Docker engine named by the environment (DOCKER_HOST,
// or the local socket), with the API version negotiated, after checking the engine answers.
func Connect(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker engine unreachable at %s (is the daemon running? Debian package docker.io): %w", cli.DaemonHost(), err)
	}
	return cli, nil
}

// Tag is the image tag of a binary whose sha256 is sum (hex): Repo:<first 12 digits>.
func Tag(sum string) string { return Repo + ":" + sum[:12] }

// HashFile returns the hex sha256 of a file.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ModuleRoot finds the polebench source tree: dir or the nearest parent holding its go.mod.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/polebench/polebench\n")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no polebench source tree at or above %s to build poled from: give a static poled binary instead (POLEBENCH_POLED)", dir)
		}
		d = parent
	}
}

// BuildBinary compiles the Go package pkg (such as "./cmd/poled") of the module at dir
// into out: static (no cgo), for linux on goarch, reproducible (-trimpath, no VCS
// stamp) so the same source gives the same hash.
func BuildBinary(ctx context.Context, dir, pkg, goarch, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, bytes.TrimSpace(b))
	}
	return nil
}

// Ensure makes sure the image of binary exists and returns its tag; built says whether
// it had to be built (false: an image with the same content hash was already there).
// The image is also tagged with each of extraTags (such as Latest).
func Ensure(ctx context.Context, cli *client.Client, binary string, log *slog.Logger, extraTags ...string) (tag string, built bool, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if fi, err := os.Stat(binary); err != nil {
		return "", false, fmt.Errorf("poled binary: %w", err)
	} else if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return "", false, fmt.Errorf("poled binary %s is empty or not a regular file", binary)
	}
	if err := checkStatic(binary); err != nil {
		return "", false, err
	}
	sum, err := HashFile(binary)
	if err != nil {
		return "", false, err
	}
	tag = Tag(sum)
	info, err := cli.ImageInspect(ctx, tag)
	switch {
	case err == nil && info.Config != nil && info.Config.Labels[HashLabel] == sum:
		log.Debug("poled image up to date", "tag", tag)
		for _, t := range extraTags {
			if err := cli.ImageTag(ctx, tag, t); err != nil {
				return "", false, fmt.Errorf("tag %s as %s: %w", tag, t, err)
			}
		}
		return tag, false, nil
	case err != nil && !client.IsErrNotFound(err):
		return "", false, fmt.Errorf("inspect image %s: %w", tag, err)
	}
	start := time.Now()
	if err := Build(ctx, cli, binary, sum, append([]string{tag}, extraTags...)); err != nil {
		return "", false, err
	}
	log.Info("built poled image", "tag", tag, "took", time.Since(start).Round(time.Millisecond))
	return tag, true, nil
}

// checkStatic refuses what cannot run in an image FROM scratch: anything but a linux
// ELF executable without a dynamic loader.
func checkStatic(binary string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("poled binary %s is not an ELF executable: %w", binary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("poled binary %s is dynamically linked and cannot run FROM scratch: build it with CGO_ENABLED=0", binary)
		}
	}
	return nil
}

// Build builds the image FROM scratch holding binary (whose sha256 is sum) and tags it.
func Build(ctx context.Context, cli *client.Client, binary, sum string, tags []string) error {
	buildCtx, err := buildContext(binary, sum)
	if err != nil {
		return err
	}
	resp, err := cli.ImageBuild(ctx, bytes.NewReader(buildCtx), build.ImageBuildOptions{
		Tags:        tags,
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1, // the classic builder needs no BuildKit session
	})
	if err != nil {
		return fmt.Errorf("build image %s: %w", tags[0], err)
	}
	defer resp.Body.Close()
	if err := readBuildStream(resp.Body); err != nil {
		return fmt.Errorf("build image %s: %w", tags[0], err)
	}
	return nil
}

// buildContext is the tar the engine builds from: a Dockerfile and a root file system
// with the binary and the directories a scratch image lacks.
func buildContext(binary, sum string) ([]byte, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY rootfs/ /\nLABEL %s=%s\nENTRYPOINT [%q]\n", HashLabel, sum, BinaryPath)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0) // fixed times: the context depends on the binary only
	entries := []struct {
		name string
		mode int64
		data []byte
		dir  bool
	}{
		{name: "Dockerfile", mode: 0o644, data: []byte(dockerfile)},
		{name: "rootfs/", mode: 0o755, dir: true},
		{name: "rootfs" + BinaryPath, mode: 0o755, data: bin},
		{name: "rootfs/etc/", mode: 0o755, dir: true},
		{name: "rootfs" + ConfigDir + "/", mode: 0o755, dir: true},
		{name: "rootfs" + DataDir + "/", mode: 0o755, dir: true},
		{name: "rootfs/tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readBuildStream reads the engine's JSON progress messages to the end and returns the
// build's error, if it reported one.
func readBuildStream(r io.Reader) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	var tail []string // the last lines of output, to explain an error
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading build output: %w", err)
		}
		if s := strings.TrimSpace(m.Stream); s != "" {
			tail = append(tail, s)
			if len(tail) > 5 {
				tail = tail[1:]
			}
		}
		if m.Error != "" || m.ErrorDetail != nil {
			msg := m.Error
			if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return fmt.Errorf("%s (after: %s)", msg, strings.Join(tail, " | "))
		}
	}
}

// Options say which poled to package.
type Options struct {
	// Binary is a static linux poled to package as is. Empty: build ./cmd/poled of the
	// source tree at or above Source (default: the working directory).
	Binary string
	Source string
	// ExtraTags are added to the image (make image adds Latest).
	ExtraTags []string
	Logger    *slog.Logger
}

// Poled builds poled (unless given a binary) for the engine's architecture and ensures
// its image. It returns the image tag and whether the image had to be built.
func Poled(ctx context.Context, cli *client.Client, o Options) (tag string, built bool, err error) {
	bin := o.Binary
	if bin == "" {
		src := o.Source
		if src == "" {
			src = "."
		}
		root, err := ModuleRoot(src)
		if err != nil {
			return "", false, err
		}
		v, err := cli.ServerVersion(ctx)
		if err != nil {
			return "", false, fmt.Errorf("docker engine version: %w", err)
		}
		tmp, err := os.MkdirTemp("", "polebench-poled-")
		if err != nil {
			return "", false, err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "poled")
		if err := BuildBinary(ctx, root, "./cmd/poled", v.Arch, bin); err != nil {
			return "", false, err
		}
	}
	return Ensure(ctx, cli, bin, o.Logger, o.ExtraTags...)
}
