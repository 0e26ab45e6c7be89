// Package image builds container images locally, FROM scratch, through the Docker
// Engine API from a tar context made here: poled's (a static binary) and a program of
// this host with the shared objects it loads (Program: the etcd flavor's). No registry
// and no base image is needed. The tag is the content's hash, so unchanged contents
// are never rebuilt.
package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
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

// HashLabel holds the full sha256 of an image's contents (Root.Hash).
const HashLabel = "polebench.image.sha256"

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

// Tag is the image tag of contents whose sha256 is sum (hex), in repository repo:
// repo:<first 12 digits>.
func Tag(repo, sum string) string { return repo + ":" + sum[:12] }

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

// Ensure makes sure the poled image of binary exists and returns its tag; built says
// whether it had to be built (false: an image with the same content hash was already
// there). The image is also tagged with each of extraTags (such as Latest).
func Ensure(ctx context.Context, cli *client.Client, binary string, log *slog.Logger, extraTags ...string) (tag string, built bool, err error) {
	if fi, err := os.Stat(binary); err != nil {
		return "", false, fmt.Errorf("poled binary: %w", err)
	} else if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return "", false, fmt.Errorf("poled binary %s is empty or not a regular file", binary)
	}
	if err := checkStatic(binary); err != nil {
		return "", false, err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return "", false, err
	}
	return EnsureRoot(ctx, cli, poledRoot(bin), log, extraTags...)
}

// poledRoot is poled's image: the binary and the directories a scratch image lacks.
func poledRoot(bin []byte) Root {
	return Root{Repo: Repo, Entrypoint: []string{BinaryPath}, Files: []File{
		{Path: BinaryPath, Mode: 0o755, Data: bin},
		{Path: ConfigDir + "/", Mode: 0o755},
		{Path: DataDir + "/", Mode: 0o755},
		{Path: "/tmp/", Mode: 0o1777},
	}}
}

// EnsureRoot makes sure the image of r exists and returns its tag, Tag(r.Repo,
// r.Hash()); built says whether it had to be built. The image is also tagged with each
// of extraTags.
func EnsureRoot(ctx context.Context, cli *client.Client, r Root, log *slog.Logger, extraTags ...string) (tag string, built bool, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sum, err := r.Hash()
	if err != nil {
		return "", false, err
	}
	tag = Tag(r.Repo, sum)
	info, err := cli.ImageInspect(ctx, tag)
	switch {
	case err == nil && info.Config != nil && info.Config.Labels[HashLabel] == sum:
		log.Debug("image up to date", "tag", tag)
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
	if err := Build(ctx, cli, r, sum, append([]string{tag}, extraTags...)); err != nil {
		return "", false, err
	}
	log.Info("built image", "tag", tag, "took", time.Since(start).Round(time.Millisecond))
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

// Build builds the image FROM scratch of r (whose Hash is sum) and tags it.
func Build(ctx context.Context, cli *client.Client, r Root, sum string, tags []string) error {
	buildCtx, err := buildContext(r, sum)
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

// buildContext is the tar the engine builds from: a Dockerfile and r's root file
// system under rootfs/.
func buildContext(r Root, sum string) ([]byte, error) {
	var df strings.Builder
	df.WriteString("FROM scratch\nCOPY rootfs/ /\n")
	for _, e := range r.Env {
		k, v, _ := strings.Cut(e, "=")
		fmt.Fprintf(&df, "ENV %s=%q\n", k, v)
	}
	entry, err := json.Marshal(r.Entrypoint)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&df, "LABEL %s=%s\nENTRYPOINT %s\n", HashLabel, sum, entry)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeEntry(tw, File{Path: "Dockerfile", Mode: 0o644, Data: []byte(df.String())}); err != nil {
		return nil, err
	}
	if err := r.writeRootfs(tw); err != nil {
		return nil, err
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
