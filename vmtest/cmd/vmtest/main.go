// Command vmtest proves netem's kernel applier on a real kernel: it builds the guest
// program (static), packs it with busybox and Debian's cloud kernel modules into an
// initramfs, boots qemu, streams the guest console, and exits 0 only when the guest
// printed its PASS line. Run from the module root:
//
//	go run ./vmtest/cmd/vmtest [flags] [-- guest flags]
//
// Needs (Debian): qemu-system-x86 linux-image-cloud-amd64 busybox-static, and
// xz-utils or zstd when the kernel's modules are compressed that way.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/vmtest"
)

const guestPkg = "github.com/polebench/polebench/vmtest/guest"

type options struct {
	kernel      string
	busybox     string
	cache       string
	accel       string
	memMB, cpus int
	icount      bool
	timeout     time.Duration
	bootTimeout time.Duration
	guestArgs   []string
}

func main() {
	var o options
	flag.StringVar(&o.kernel, "kernel", "", "kernel version under /boot and /lib/modules (default: newest *-cloud-amd64)")
	flag.StringVar(&o.busybox, "busybox", "", "static busybox (default: busybox on PATH, from busybox-static)")
	flag.StringVar(&o.cache, "cache", defaultCache(), "directory for built artifacts, one subdirectory per kernel version")
	flag.StringVar(&o.accel, "accel", "auto", "qemu accelerator: auto (kvm if /dev/kvm can boot a stock kernel, else tcg), kvm or tcg")
	flag.IntVar(&o.memMB, "mem", 512, "guest memory in MiB")
	flag.IntVar(&o.cpus, "smp", 1, "guest CPUs")
	flag.BoolVar(&o.icount, "icount", true, "with tcg: run the guest on a virtual clock (exact timers however loaded the host is)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "kill the VM after this long")
	flag.DurationVar(&o.bootTimeout, "boot-timeout", 20*time.Second, "with kvm: fall back to tcg when the kernel prints nothing by then")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: vmtest [flags] [-- guest flags]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.guestArgs = flag.Args()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "vmtest: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func defaultCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "polebench", "vmtest")
	}
	return filepath.Join(os.TempDir(), "polebench-vmtest")
}

func run(ctx context.Context, o options, out io.Writer) error {
	start := time.Now()
	if o.accel != "auto" && o.accel != "kvm" && o.accel != "tcg" {
		return fmt.Errorf("-accel %q: want auto, kvm or tcg", o.accel)
	}
	k, err := vmtest.FindKernel("/boot", "/lib/modules", o.kernel)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return fmt.Errorf("qemu-system-x86_64 not found (apt-get install qemu-system-x86)")
	}
	if o.busybox == "" {
		if o.busybox, err = exec.LookPath("busybox"); err != nil {
			return fmt.Errorf("busybox not found (apt-get install busybox-static)")
		}
	}
	dir := filepath.Join(o.cache, k.Version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	guest := filepath.Join(dir, "guest")
	if err := buildGuest(ctx, guest); err != nil {
		return err
	}
	initrd := filepath.Join(dir, "initramfs.cpio")
	if err := writeInitramfs(ctx, initrd, vmtest.Image{
		Kernel: k, Modules: vmtest.Modules, Busybox: o.busybox,
		Guest: guest, GuestArgs: o.guestArgs, CacheDir: o.cache,
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "vmtest: kernel %s, initramfs %s, built in %v\n", k.Version, initrd, time.Since(start).Round(time.Millisecond))

	// The contrast: this host's kernel may well lack netem; the VM's has it.
	if err := netem.Probe(ctx); err != nil {
		fmt.Fprintf(out, "vmtest: netem.Probe on this host: %v\n", err)
	} else {
		fmt.Fprintln(out, "vmtest: netem.Probe on this host: nil (this host runs netem too)")
	}

	accel, why := o.accel, "requested"
	if accel == "auto" {
		accel, why = vmtest.DetectAccel()
	}
	vm := vmtest.VM{Kernel: k.Image, Initrd: initrd, MemoryMB: o.memMB, CPUs: o.cpus, Accel: accel, ICount: o.icount}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := boot(ctx, vm, why, o, out)
	if err != nil && errors.Is(err, vmtest.ErrNoBoot) && o.accel == "auto" {
		fmt.Fprintf(out, "vmtest: %v; retrying with tcg\n", err)
		vm.Accel = "tcg"
		res, err = boot(ctx, vm, "kvm printed nothing", o, out)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "vmtest: VM ran %v (accel %s); total %v\n", res.Elapsed.Round(100*time.Millisecond), vm.Accel, time.Since(start).Round(100*time.Millisecond))
	switch {
	case res.Passed:
		fmt.Fprintln(out, "vmtest: PASS")
		return nil
	case res.Verdict == "":
		return fmt.Errorf("the guest printed no verdict line")
	default:
		return fmt.Errorf("guest says: %s", res.Verdict)
	}
}

func boot(ctx context.Context, vm vmtest.VM, why string, o options, out io.Writer) (vmtest.Result, error) {
	bootTimeout := time.Duration(0)
	if vm.Accel == "kvm" {
		bootTimeout = o.bootTimeout
	}
	fmt.Fprintf(out, "vmtest: accel %s (%s)\nvmtest: qemu-system-x86_64 %s\n", vm.Accel, why, strings.Join(quoteArgs(vm.Args()), " "))
	return vm.Run(ctx, out, bootTimeout)
}

// buildGuest compiles the guest program statically for the VM.
func buildGuest(ctx context.Context, dst string) error {
	tmp := fmt.Sprintf("%s.%d", dst, os.Getpid())
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, guestPkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("go build %s (run from inside the module): %w", guestPkg, err)
	}
	return os.Rename(tmp, dst)
}

// writeInitramfs writes the image next to dst and renames it into place, so a
// concurrent run never boots half a file.
func writeInitramfs(ctx context.Context, dst string, img vmtest.Image) error {
	f, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename this finds nothing
	if err := vmtest.WriteInitramfs(ctx, f, img); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), dst)
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " '\"") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}
