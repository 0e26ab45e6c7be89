package vmtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// VM is one qemu boot of a kernel and an initramfs, console on the first serial port.
type VM struct {
	QEMU     string // the emulator, qemu-system-x86_64 by default
	Kernel   string
	Initrd   string
	Append   string // extra kernel command line
	MemoryMB int
	CPUs     int
	Accel    string // "kvm" or "tcg"
	// ICount runs a tcg guest on a virtual clock: one nanosecond per instruction, and
	// idle time skipped (-icount shift=0,sleep=off). Guest timers then fire on time
	// however loaded the host is, so measured delays are the kernel's, not the
	// host scheduler's. Ignored with kvm.
	ICount bool
}

// Args is the emulator's command line.
func (vm VM) Args() []string {
	// loglevel=6 keeps the kernel's banner (Run watches for it), notices, warnings
	// and errors, not its chatter.
	cmdline := "console=ttyS0 panic=-1 loglevel=6 " + vm.Append
	args := []string{"-accel", vm.Accel}
	if vm.ICount && vm.Accel == "tcg" {
		args = append(args, "-icount", "shift=0,sleep=off")
	}
	return append(args,
		"-m", strconv.Itoa(vm.MemoryMB),
		"-smp", strconv.Itoa(vm.CPUs),
		// No default devices (no NIC whose option ROM SeaBIOS would load): the
		// guest's network is its own namespaces.
		"-nodefaults", "-nographic", "-serial", "stdio",
		"-no-reboot",
		"-kernel", vm.Kernel,
		"-initrd", vm.Initrd,
		"-append", strings.TrimSpace(cmdline),
	)
}

func (vm VM) qemu() string {
	if vm.QEMU != "" {
		return vm.QEMU
	}
	return "qemu-system-x86_64"
}

// Result of a boot.
type Result struct {
	Passed  bool
	Verdict string // the marker line, "" if the guest printed none
	Elapsed time.Duration
}

// ErrNoBoot means the kernel printed nothing within the boot timeout (e.g. a
// /dev/kvm that cannot run this kernel).
var ErrNoBoot = errors.New("the kernel printed no banner")

// Run boots vm, copies its console to out line by line, and returns when the
// emulator exits or ctx ends (then it kills the emulator). When bootTimeout > 0 and
// the kernel's "Linux version" banner has not appeared by then, it returns ErrNoBoot.
// The result passes only if the guest printed PassMarker.
func (vm VM) Run(ctx context.Context, out io.Writer, bootTimeout time.Duration) (Result, error) {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := exec.CommandContext(ctx, vm.qemu(), vm.Args()...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw // stdin stays /dev/null: no raw-mode terminal
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return Result{}, fmt.Errorf("%s: %w (apt-get install qemu-system-x86)", vm.qemu(), err)
	}
	pw.Close()

	booted := make(chan struct{})
	if bootTimeout > 0 {
		t := time.AfterFunc(bootTimeout, func() {
			select {
			case <-booted:
			default:
				cancel(ErrNoBoot)
			}
		})
		defer t.Stop()
	}

	res := Scan(pr, out, func() { close(booted) })
	pr.Close()
	werr := cmd.Wait()
	res.Elapsed = time.Since(start)
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, ErrNoBoot) {
			return res, fmt.Errorf("accel %s: %w within %v", vm.Accel, ErrNoBoot, bootTimeout)
		}
		return res, fmt.Errorf("VM stopped after %v: %w", res.Elapsed.Round(time.Second), cause)
	}
	if werr != nil {
		return res, fmt.Errorf("%s: %w", vm.qemu(), werr)
	}
	return res, nil
}

// ansiEscape matches the terminal resets SeaBIOS prints.
var ansiEscape = regexp.MustCompile(`\x1b(\[[0-9;?]*[A-Za-z]|c)`)

// Scan copies a console to out line by line (without carriage returns) and finds
// the guest's verdict: the first line starting with PassMarker or FailMarker. It
// calls banner once, at the kernel's "Linux version" line, if not nil.
func Scan(console io.Reader, out io.Writer, banner func()) Result {
	var res Result
	sc := bufio.NewScanner(console)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := ansiEscape.ReplaceAllString(strings.TrimRight(sc.Text(), "\r"), "")
		fmt.Fprintln(out, line)
		if banner != nil && strings.Contains(line, "Linux version") {
			banner()
			banner = nil
		}
		if t := strings.TrimSpace(line); res.Verdict == "" && (strings.HasPrefix(t, PassMarker) || strings.HasPrefix(t, FailMarker)) {
			res.Verdict = t
			res.Passed = strings.HasPrefix(t, PassMarker)
		}
	}
	return res
}

// DetectAccel picks kvm when /dev/kvm can be opened and is a full KVM, else tcg
// (software emulation), and says why.
func DetectAccel() (accel, why string) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "tcg", "no usable /dev/kvm: " + err.Error()
	}
	f.Close()
	// PVM (pagetable-based KVM, used by some sandboxes) runs only PVM-aware guest
	// kernels; Debian's stock kernel hangs before its first message.
	if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
		return "tcg", "/dev/kvm is PVM (kvm_pvm loaded), which cannot boot a stock kernel"
	}
	return "kvm", "/dev/kvm is usable"
}
