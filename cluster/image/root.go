package image

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Root is what an image holds: its files, and the program it runs.
type Root struct {
	Repo       string // tagged Repo:<its hash's first 12 digits>
	Entrypoint []string
	Env        []string // KEY=value
	Files      []File
}

// File is one entry of an image's root file system.
type File struct {
	Path string // absolute, in the image; a directory's ends in "/"
	Mode int64
	Data []byte
}

// Hash is the hex sha256 of r's contents (its files, entrypoint and environment):
// what its tag and HashLabel carry, so that equal contents are built once.
func (r Root) Hash() (string, error) {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode([][]string{r.Entrypoint, r.Env}); err != nil {
		return "", err
	}
	tw := tar.NewWriter(h)
	if err := r.writeRootfs(tw); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeRootfs writes r's files under rootfs/, in path order, each directory on the way
// to a file (mode 0755 unless r names it) before it.
func (r Root) writeRootfs(tw *tar.Writer) error {
	byPath := map[string]File{"/": {Path: "/", Mode: 0o755}}
	for _, f := range r.Files {
		if !strings.HasPrefix(f.Path, "/") {
			return fmt.Errorf("image %s: file %q: want an absolute path", r.Repo, f.Path)
		}
		byPath[f.Path] = f
		for d := path.Dir(strings.TrimSuffix(f.Path, "/")); d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d+"/"]; !ok {
				byPath[d+"/"] = File{Path: d + "/", Mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		f := byPath[p]
		f.Path = "rootfs" + f.Path
		if err := writeEntry(tw, f); err != nil {
			return err
		}
	}
	return nil
}

// writeEntry writes f with a fixed time: a context depends on its contents only.
func writeEntry(tw *tar.Writer, f File) error {
	h := &tar.Header{Name: f.Path, Mode: f.Mode, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
	if strings.HasSuffix(f.Path, "/") {
		h.Typeflag, h.Size = tar.TypeDir, 0
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag == tar.TypeDir {
		return nil
	}
	_, err := tw.Write(f.Data)
	return err
}
