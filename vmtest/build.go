package vmtest

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Lines the guest's /init prints when the guest program returns. Only the runner's
// Scan reads them; the kernel command line never contains them.
const (
	PassMarker = "VMTEST-RESULT: PASS"
	FailMarker = "VMTEST-RESULT: FAIL"
)

// Modules the guest needs: the kernel applier's qdiscs and classifier, and veth
// pairs and a bridge between the namespaces.
var Modules = []string{"sch_netem", "sch_htb", "cls_u32", "veth", "bridge"}

// Image is what goes into the initramfs.
type Image struct {
	Kernel    Kernel
	Modules   []string // names, e.g. sch_netem; dependencies are added
	Busybox   string   // a statically linked busybox
	Guest     string   // the statically linked guest program
	GuestArgs []string
	CacheDir  string // decompressed modules are kept here, per kernel version
}

// errNotStatic reports a dynamically linked busybox.
var errNotStatic = errors.New("is dynamically linked (apt-get install busybox-static)")

// GuestPath is where the guest program lives inside the VM.
const GuestPath = "/bin/vmtest-guest"

// WriteInitramfs writes the initramfs of img to w.
func WriteInitramfs(ctx context.Context, w io.Writer, img Image) error {
	for _, bin := range []string{img.Busybox, img.Guest} {
		if err := checkStatic(bin); err != nil {
			return err
		}
	}
	ix, err := LoadModuleIndex(img.Kernel)
	if err != nil {
		return err
	}
	order, err := ix.LoadOrder(img.Modules)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", img.Kernel.Version, err)
	}
	busybox, err := os.ReadFile(img.Busybox)
	if err != nil {
		return err
	}
	guest, err := os.ReadFile(img.Guest)
	if err != nil {
		return err
	}

	a := NewInitramfs(w)
	for _, d := range []string{"bin", "dev", "proc", "sys", "tmp", "run", "lib", "lib/modules"} {
		a.Dir(d)
	}
	a.File("bin/busybox", 0o755, busybox)
	a.File(GuestPath[1:], 0o755, guest)
	var insmod []string
	for _, rel := range order {
		data, err := cachedModule(ctx, img.CacheDir, img.Kernel, rel)
		if err != nil {
			return err
		}
		name := "lib/modules/" + moduleName(rel) + ".ko"
		a.File(name, 0o644, data)
		insmod = append(insmod, "/"+name)
	}
	a.File("init", 0o755, []byte(initScript(insmod, img.GuestArgs)))
	return a.Close()
}

// initScript mounts the kernel file systems, loads the modules in order, runs the
// guest program and prints the verdict. If poweroff fails, init exits, the kernel
// panics, panic=-1 reboots and qemu's -no-reboot ends the VM.
func initScript(modules, args []string) string {
	var b strings.Builder
	b.WriteString(`#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
verdict() { echo; echo "$1"; poweroff -f; sleep 5; exit 1; }
`)
	for _, m := range modules {
		fmt.Fprintf(&b, "insmod %s || verdict %s\n", shellQuote(m), shellQuote(FailMarker+" (insmod "+path.Base(m)+")"))
	}
	b.WriteString("echo \"vmtest: modules loaded: $(cut -d' ' -f1 /proc/modules | tr '\\n' ' ')\"\n")
	b.WriteString(GuestPath)
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	fmt.Fprintf(&b, "\nrc=$?\n[ $rc = 0 ] && verdict %s\nverdict \"%s (guest exit status $rc)\"\n",
		shellQuote(PassMarker), FailMarker)
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// cachedModule returns module rel of kernel k decompressed, from cacheDir when the
// cached copy is newer than the module file.
func cachedModule(ctx context.Context, cacheDir string, k Kernel, rel string) ([]byte, error) {
	src := filepath.Join(k.ModDir, rel)
	si, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if cacheDir == "" {
		return ReadModule(ctx, src)
	}
	dst := filepath.Join(cacheDir, k.Version, "modules", moduleName(rel)+".ko")
	if di, err := os.Stat(dst); err == nil && !di.ModTime().Before(si.ModTime()) {
		return os.ReadFile(dst)
	}
	data, err := ReadModule(ctx, src)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, err
	}
	return data, os.WriteFile(dst, data, 0o644)
}

// checkStatic rejects a program with an ELF interpreter: the initramfs has no libc.
func checkStatic(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			if strings.Contains(filepath.Base(file), "busybox") {
				return fmt.Errorf("%s %w", file, errNotStatic)
			}
			return fmt.Errorf("%s is dynamically linked (build it with CGO_ENABLED=0)", file)
		}
	}
	return nil
}
