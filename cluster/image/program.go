package image

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Program is the root file system of an image that runs the program at bin (an
// absolute path) of this host: bin at its own path and, if it is dynamically linked,
// its ELF interpreter (PT_INTERP) at the path bin names and the shared objects it
// loads (DT_NEEDED, and theirs), each found as the host's loader finds it (RPATH or
// RUNPATH, the directories of /etc/ld.so.conf, the default ones) and copied where it
// was found, symbolic links followed. The image has no ld.so.cache, so
// LD_LIBRARY_PATH names those directories. Repo and Entrypoint are the caller's.
func Program(bin string) (Root, error) {
	if !filepath.IsAbs(bin) {
		return Root{}, fmt.Errorf("program %s: want an absolute path", bin)
	}
	f, err := elf.Open(bin)
	if err != nil {
		return Root{}, fmt.Errorf("program %s is not an ELF executable: %w", bin, err)
	}
	defer f.Close()
	paths := []string{bin}
	interp, err := interpreter(f)
	if err != nil {
		return Root{}, fmt.Errorf("program %s: %w", bin, err)
	}
	var dirs []string
	if interp != "" {
		paths = append(paths, interp)
		libs, err := needed(bin, f, filepath.Base(interp), systemDirs())
		if err != nil {
			return Root{}, err
		}
		for _, l := range libs {
			paths = append(paths, l)
			if d := filepath.Dir(l); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	var r Root
	for _, p := range paths {
		data, err := os.ReadFile(p) // through symbolic links: the image gets the file
		if err != nil {
			return Root{}, fmt.Errorf("program %s: %w", bin, err)
		}
		r.Files = append(r.Files, File{Path: p, Mode: 0o755, Data: data})
	}
	if len(dirs) > 0 {
		r.Env = []string{"LD_LIBRARY_PATH=" + strings.Join(dirs, ":")}
	}
	return r, nil
}

// interpreter is f's PT_INTERP, "" for a static executable.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("reading PT_INTERP: %w", err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// needed is the shared objects bin (open as f) loads, transitively, as host paths in
// the order they are first needed; the interpreter's own name (loaded already, as
// the loader knows it) is not searched.
func needed(bin string, f *elf.File, interp string, system []string) ([]string, error) {
	type obj struct {
		path string
		f    *elf.File
	}
	var found []string
	seen := map[string]bool{interp: true}
	queue := []obj{{bin, f}}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		names, err := o.f.ImportedLibraries()
		if err != nil {
			return nil, fmt.Errorf("%s: DT_NEEDED: %w", o.path, err)
		}
		for _, name := range names {
			if seen[name] {
				continue
			}
			seen[name] = true
			p, lf, err := locate(name, append(runPath(o.path, o.f), system...), f)
			if err != nil {
				return nil, fmt.Errorf("%s needs %s: %w", o.path, name, err)
			}
			defer lf.Close()
			found = append(found, p)
			queue = append(queue, obj{p, lf})
		}
	}
	return found, nil
}

// runPath is the directories an object's own RUNPATH (else RPATH) names, $ORIGIN
// being its directory.
func runPath(p string, f *elf.File) []string {
	rp, _ := f.DynString(elf.DT_RUNPATH)
	if len(rp) == 0 {
		rp, _ = f.DynString(elf.DT_RPATH)
	}
	var dirs []string
	for _, s := range rp {
		for _, d := range strings.Split(s, ":") {
			d = strings.NewReplacer("${ORIGIN}", filepath.Dir(p), "$ORIGIN", filepath.Dir(p)).Replace(d)
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// locate finds shared object name in dirs: the first file there that is an ELF object
// of bin's class and machine (a 32-bit library of the same name is passed over, as the
// loader passes it over).
func locate(name string, dirs []string, bin *elf.File) (string, *elf.File, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		if f.Class == bin.Class && f.Machine == bin.Machine {
			return p, f, nil
		}
		f.Close()
	}
	return "", nil, fmt.Errorf("not found in %s", strings.Join(dirs, ", "))
}

// systemDirs are the directories the host's loader searches after an object's own:
// those /etc/ld.so.conf lists (through its includes), then the default ones.
func systemDirs() []string {
	dirs, _ := ldsoConf("/etc/ld.so.conf", 0)
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// ldsoConf reads a loader configuration file: a directory per line, "include GLOB"
// lines, comments after '#'. A missing file lists nothing.
func ldsoConf(file string, depth int) ([]string, error) {
	if depth > 8 {
		return nil, errors.New("ld.so.conf: includes nested too deep")
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var dirs []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if glob, ok := strings.CutPrefix(line, "include "); ok {
			glob = strings.TrimSpace(glob)
			if !filepath.IsAbs(glob) {
				glob = filepath.Join(filepath.Dir(file), glob)
			}
			files, _ := filepath.Glob(glob)
			for _, inc := range files {
				more, _ := ldsoConf(inc, depth+1)
				dirs = append(dirs, more...)
			}
			continue
		}
		if line != "" {
			dirs = append(dirs, line)
		}
	}
	return dirs, sc.Err()
}
