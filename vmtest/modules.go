package vmtest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Kernel is an installed kernel image and its module tree.
type Kernel struct {
	Version string // e.g. 6.1.0-56-cloud-amd64
	Image   string // /boot/vmlinuz-<Version>
	ModDir  string // /lib/modules/<Version>
}

// FindKernel returns the kernel named version, or when version is empty the newest
// vmlinuz-*-cloud-amd64 in bootDir that has a module tree under modulesDir.
func FindKernel(bootDir, modulesDir, version string) (Kernel, error) {
	var versions []string
	if version != "" {
		versions = []string{version}
	} else {
		imgs, err := filepath.Glob(filepath.Join(bootDir, "vmlinuz-*-cloud-amd64"))
		if err != nil {
			return Kernel{}, err
		}
		for _, img := range imgs {
			versions = append(versions, strings.TrimPrefix(filepath.Base(img), "vmlinuz-"))
		}
		slices.SortFunc(versions, compareVersions)
		slices.Reverse(versions)
	}
	for _, v := range versions {
		k := Kernel{Version: v, Image: filepath.Join(bootDir, "vmlinuz-"+v), ModDir: filepath.Join(modulesDir, v)}
		if _, err := os.Stat(k.Image); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(k.ModDir, "modules.dep")); err != nil {
			continue
		}
		return k, nil
	}
	if version != "" {
		return Kernel{}, fmt.Errorf("kernel %s: need %s/vmlinuz-%s and %s/%s/modules.dep (apt-get install linux-image-%s)",
			version, bootDir, version, modulesDir, version, version)
	}
	return Kernel{}, fmt.Errorf("no %s/vmlinuz-*-cloud-amd64 with modules in %s (apt-get install linux-image-cloud-amd64)",
		bootDir, modulesDir)
}

// compareVersions orders kernel versions numerically where they are numbers
// ("6.1.0-10" < "6.1.0-9" as strings, not as versions).
func compareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}
	fa, fb := split(a), split(b)
	for i := 0; i < len(fa) && i < len(fb); i++ {
		na, ea := atoi(fa[i])
		nb, eb := atoi(fb[i])
		switch {
		case ea && eb && na != nb:
			return na - nb
		case !(ea && eb) && fa[i] != fb[i]:
			return strings.Compare(fa[i], fb[i])
		}
	}
	return len(fa) - len(fb)
}

func atoi(s string) (int, bool) {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' || n > 1e8 {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, s != ""
}

// ModuleIndex is a kernel's modules.dep and modules.builtin: which module file
// needs which others, and which modules are compiled in.
type ModuleIndex struct {
	deps    map[string][]string // module path (relative to ModDir) -> dependency paths
	byName  map[string]string   // module name -> path
	builtin map[string]bool     // module names compiled into the kernel
}

// moduleName is the name modprobe knows a module file by: base name without the
// .ko[.xz|.zst|.gz] suffix, '-' read as '_'.
func moduleName(p string) string {
	base := path.Base(p)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

// ParseModuleIndex reads modules.dep (required) and modules.builtin (may be nil).
// name is used in errors.
func ParseModuleIndex(name string, dep, builtin io.Reader) (*ModuleIndex, error) {
	ix := &ModuleIndex{deps: map[string][]string{}, byName: map[string]string{}, builtin: map[string]bool{}}
	sc := bufio.NewScanner(dep)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		mod, rest, ok := strings.Cut(text, ":")
		if !ok || mod == "" || !strings.Contains(mod, ".ko") {
			return nil, fmt.Errorf("%s:%d: want \"path.ko: deps...\", got %q", name, line, text)
		}
		ix.deps[mod] = strings.Fields(rest)
		ix.byName[moduleName(mod)] = mod
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for mod, deps := range ix.deps {
		for _, d := range deps {
			if _, ok := ix.deps[d]; !ok {
				return nil, fmt.Errorf("%s: %s depends on %s, which has no line of its own", name, mod, d)
			}
		}
	}
	if builtin != nil {
		sc := bufio.NewScanner(builtin)
		for sc.Scan() {
			if t := strings.TrimSpace(sc.Text()); t != "" {
				ix.builtin[moduleName(t)] = true
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: modules.builtin: %w", name, err)
		}
	}
	return ix, nil
}

// LoadOrder returns the module files to insmod, dependencies first, so that every
// named module ends up loaded. Modules compiled into the kernel are left out.
func (ix *ModuleIndex) LoadOrder(names []string) ([]string, error) {
	var order []string
	done := map[string]bool{}
	var visit func(mod string, stack []string) error
	visit = func(mod string, stack []string) error {
		if done[mod] {
			return nil
		}
		if slices.Contains(stack, mod) {
			return fmt.Errorf("dependency cycle: %s", strings.Join(append(stack, mod), " -> "))
		}
		for _, d := range ix.deps[mod] {
			if err := visit(d, append(stack, mod)); err != nil {
				return err
			}
		}
		done[mod] = true
		order = append(order, mod)
		return nil
	}
	for _, n := range names {
		n = strings.ReplaceAll(n, "-", "_")
		mod, ok := ix.byName[n]
		switch {
		case ok:
			if err := visit(mod, nil); err != nil {
				return nil, err
			}
		case ix.builtin[n]:
		default:
			return nil, fmt.Errorf("module %s is neither in modules.dep nor built in", n)
		}
	}
	return order, nil
}

// LoadModuleIndex reads k's modules.dep and modules.builtin.
func LoadModuleIndex(k Kernel) (*ModuleIndex, error) {
	dep, err := os.Open(filepath.Join(k.ModDir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer dep.Close()
	var builtin io.Reader
	if f, err := os.Open(filepath.Join(k.ModDir, "modules.builtin")); err == nil {
		defer f.Close()
		builtin = f
	}
	return ParseModuleIndex(filepath.Join(k.ModDir, "modules.dep"), dep, builtin)
}

// ReadModule returns the plain ELF object of a module file, decompressing .ko.gz
// in Go and .ko.xz / .ko.zst with Debian's xz / zstd (busybox insmod takes only
// plain objects).
func ReadModule(ctx context.Context, file string) ([]byte, error) {
	var data []byte
	var err error
	switch {
	case strings.HasSuffix(file, ".ko"):
		data, err = os.ReadFile(file)
	case strings.HasSuffix(file, ".ko.gz"):
		data, err = gunzip(file)
	case strings.HasSuffix(file, ".ko.xz"):
		data, err = decompress(ctx, "xz", "xz-utils", file)
	case strings.HasSuffix(file, ".ko.zst"):
		data, err = decompress(ctx, "zstd", "zstd", file)
	default:
		return nil, fmt.Errorf("%s: not a kernel module (.ko, .ko.gz, .ko.xz, .ko.zst)", file)
	}
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte("\x7fELF")) {
		return nil, fmt.Errorf("%s: decompressed data is not an ELF object", file)
	}
	return data, nil
}

func gunzip(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return data, nil
}

func decompress(ctx context.Context, tool, pkg, file string) ([]byte, error) {
	if _, err := exec.LookPath(tool); err != nil {
		return nil, fmt.Errorf("%s: needs %s to decompress (apt-get install %s)", file, tool, pkg)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, "-dc", file)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -dc %s: %w: %s", tool, file, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
