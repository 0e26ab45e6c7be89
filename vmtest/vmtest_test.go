package vmtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// cpioEntry is one member of a newc archive, as readCPIO finds it.
type cpioEntry struct {
	name string
	mode uint32
	data []byte
}

// readCPIO parses a newc archive strictly: magic, hex fields, 4-byte padding, and a
// trailer at the very end.
func readCPIO(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	for {
		if off%4 != 0 {
			t.Fatalf("entry at offset %d is not 4-byte aligned", off)
		}
		if len(b) < off+110 || string(b[off:off+6]) != "070701" {
			t.Fatalf("no newc header at offset %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("header at %d field %d: %v", off, i, err)
			}
			return int(v)
		}
		mode, size, namesize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+namesize])
		if !strings.HasSuffix(name, "\x00") {
			t.Fatalf("name %q at %d not NUL-terminated", name, off)
		}
		name = strings.TrimSuffix(name, "\x00")
		data := off + 110 + namesize
		data += (4 - data%4) % 4
		if name == "TRAILER!!!" {
			if data != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-data)
			}
			return out
		}
		out = append(out, cpioEntry{name, uint32(mode), b[data : data+size]})
		off = data + size
		off += (4 - off%4) % 4
	}
}

func TestInitramfsRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	a := NewInitramfs(&buf)
	a.Dir("/bin")
	a.File("bin/busybox", 0o755, []byte("12345")) // odd sizes exercise the padding
	a.File("/init", 0o700, []byte("#!/bin/sh\n"))
	a.Symlink("bin/sh", "busybox")
	a.File("empty", 0o644, nil)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := readCPIO(t, buf.Bytes())
	want := []cpioEntry{
		{"bin", 0o040755, []byte{}},
		{"bin/busybox", 0o100755, []byte("12345")},
		{"init", 0o100700, []byte("#!/bin/sh\n")},
		{"bin/sh", 0o120777, []byte("busybox")},
		{"empty", 0o100644, []byte{}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].name != want[i].name || got[i].mode != want[i].mode || !bytes.Equal(got[i].data, want[i].data) {
			t.Errorf("entry %d = %q %o %q, want %q %o %q", i, got[i].name, got[i].mode, got[i].data,
				want[i].name, want[i].mode, want[i].data)
		}
	}
}

func TestInitramfsBadName(t *testing.T) {
	a := NewInitramfs(&bytes.Buffer{})
	a.File("/", 0o644, nil)
	if err := a.Close(); err == nil || !strings.Contains(err.Error(), "bad entry name") {
		t.Fatalf("Close() = %v, want a bad-name error", err)
	}
}

func testIndex(t *testing.T) *ModuleIndex {
	t.Helper()
	dep, err := os.Open("testdata/modules.dep")
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Close()
	builtin, err := os.Open("testdata/modules.builtin")
	if err != nil {
		t.Fatal(err)
	}
	defer builtin.Close()
	ix, err := ParseModuleIndex("testdata/modules.dep", dep, builtin)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func TestLoadOrder(t *testing.T) {
	ix := testIndex(t)
	for _, tc := range []struct {
		names []string
		want  []string
	}{
		{Modules, []string{
			"kernel/net/sched/sch_netem.ko", "kernel/net/sched/sch_htb.ko", "kernel/net/sched/cls_u32.ko",
			"kernel/drivers/net/veth.ko", "kernel/net/llc/llc.ko", "kernel/net/802/stp.ko", "kernel/net/bridge/bridge.ko",
		}},
		// Dependencies come once, before their users; built-ins are left out.
		{[]string{"br_netfilter", "bridge", "sch_fq_codel", "dummy"}, []string{
			"kernel/net/llc/llc.ko", "kernel/net/802/stp.ko", "kernel/net/bridge/bridge.ko", "kernel/net/bridge/br_netfilter.ko",
		}},
		{[]string{"br-netfilter"}, []string{ // '-' and '_' are one
			"kernel/net/llc/llc.ko", "kernel/net/802/stp.ko", "kernel/net/bridge/bridge.ko", "kernel/net/bridge/br_netfilter.ko",
		}},
		{nil, nil},
	} {
		got, err := ix.LoadOrder(tc.names)
		if err != nil {
			t.Fatalf("LoadOrder(%v): %v", tc.names, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("LoadOrder(%v) =\n%q\nwant\n%q", tc.names, got, tc.want)
		}
	}
}

func TestModuleIndexErrors(t *testing.T) {
	ix := testIndex(t)
	if _, err := ix.LoadOrder([]string{"sch_netem", "sch_cake"}); err == nil || !strings.Contains(err.Error(), "sch_cake") {
		t.Errorf("unknown module: err = %v, want one naming sch_cake", err)
	}
	for _, tc := range []struct{ dep, want string }{
		{"a.ko:\nnot a module line\n", "m.dep:2: want"},
		{"a.ko: b.ko\n", "a.ko depends on b.ko, which has no line of its own"},
	} {
		_, err := ParseModuleIndex("m.dep", strings.NewReader(tc.dep), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseModuleIndex(%q) = %v, want %q", tc.dep, err, tc.want)
		}
	}
	cyc, err := ParseModuleIndex("m.dep", strings.NewReader("a.ko: b.ko\nb.ko: a.ko\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cyc.LoadOrder([]string{"a"}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: err = %v", err)
	}
}

func TestFindKernel(t *testing.T) {
	root := t.TempDir()
	boot, mods := filepath.Join(root, "boot"), filepath.Join(root, "modules")
	install := func(v string, withModules bool) {
		must(t, os.MkdirAll(boot, 0o755))
		must(t, os.WriteFile(filepath.Join(boot, "vmlinuz-"+v), nil, 0o644))
		if withModules {
			must(t, os.MkdirAll(filepath.Join(mods, v), 0o755))
			must(t, os.WriteFile(filepath.Join(mods, v, "modules.dep"), nil, 0o644))
		}
	}
	if _, err := FindKernel(boot, mods, ""); err == nil || !strings.Contains(err.Error(), "linux-image-cloud-amd64") {
		t.Fatalf("no kernel: err = %v, want the package to install", err)
	}
	install("6.1.0-9-cloud-amd64", true)
	install("6.1.0-10-cloud-amd64", true) // newer, though it sorts first as a string
	install("6.1.0-11-cloud-amd64", false)
	install("6.1.0-12-amd64", true) // not a cloud kernel
	k, err := FindKernel(boot, mods, "")
	if err != nil {
		t.Fatal(err)
	}
	want := Kernel{"6.1.0-10-cloud-amd64", filepath.Join(boot, "vmlinuz-6.1.0-10-cloud-amd64"), filepath.Join(mods, "6.1.0-10-cloud-amd64")}
	if k != want {
		t.Errorf("FindKernel = %+v, want %+v", k, want)
	}
	if k, err := FindKernel(boot, mods, "6.1.0-12-amd64"); err != nil || k.Version != "6.1.0-12-amd64" {
		t.Errorf("FindKernel(6.1.0-12-amd64) = %+v, %v", k, err)
	}
	if _, err := FindKernel(boot, mods, "6.1.0-11-cloud-amd64"); err == nil {
		t.Error("a kernel without modules was accepted")
	}
}

func TestReadModule(t *testing.T) {
	dir := t.TempDir()
	elf := append([]byte("\x7fELF"), bytes.Repeat([]byte{7}, 1000)...)
	plain := filepath.Join(dir, "a.ko")
	must(t, os.WriteFile(plain, elf, 0o644))

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(elf)
	must(t, zw.Close())
	must(t, os.WriteFile(filepath.Join(dir, "b.ko.gz"), gz.Bytes(), 0o644))

	files := []string{plain, filepath.Join(dir, "b.ko.gz")}
	if _, err := exec.LookPath("xz"); err == nil {
		must(t, exec.Command("xz", "-k", "-S", ".xz", plain).Run()) // a.ko.xz
		files = append(files, plain+".xz")
	} else if os.Getenv("CI") != "" {
		t.Fatal("xz missing (apt-get install xz-utils)")
	} else {
		t.Log("xz missing: .ko.xz not tested (apt-get install xz-utils)")
	}
	for _, f := range files {
		got, err := ReadModule(context.Background(), f)
		if err != nil || !bytes.Equal(got, elf) {
			t.Errorf("ReadModule(%s) = %d bytes, %v; want the ELF object", filepath.Base(f), len(got), err)
		}
	}

	must(t, os.WriteFile(filepath.Join(dir, "c.ko"), []byte("not elf"), 0o644))
	if _, err := ReadModule(context.Background(), filepath.Join(dir, "c.ko")); err == nil {
		t.Error("a non-ELF module was accepted")
	}
	if _, err := ReadModule(context.Background(), filepath.Join(dir, "d.ko.bz2")); err == nil {
		t.Error("an unknown compression was accepted")
	}
}

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name, console string
		passed        bool
		verdict       string
		banner        int
	}{
		{"pass", "\x1bcSeaBIOS\r\n[0.0] Linux version 6.1\r\nguest output\r\n\r\nVMTEST-RESULT: PASS\r\n[5.0] reboot: Power down\r\n",
			true, PassMarker, 1},
		{"fail first", "Linux version x\nLinux version y\nVMTEST-RESULT: FAIL (guest exit status 1)\nVMTEST-RESULT: PASS\n",
			false, "VMTEST-RESULT: FAIL (guest exit status 1)", 1},
		// A marker inside a line (the kernel echoing a command, say) is no verdict.
		{"mid-line", "Kernel command line: echo VMTEST-RESULT: PASS\n", false, "", 0},
		{"no verdict", "Kernel panic - not syncing\n", false, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			banners := 0
			res := Scan(strings.NewReader(tc.console), &out, func() { banners++ })
			if res.Passed != tc.passed || res.Verdict != tc.verdict || banners != tc.banner {
				t.Errorf("Scan = %+v with %d banners, want passed %v verdict %q, %d banners", res, banners, tc.passed, tc.verdict, tc.banner)
			}
			if strings.ContainsAny(out.String(), "\r\x1b") {
				t.Errorf("output keeps carriage returns or escapes: %q", out.String())
			}
		})
	}
}

func TestInitScriptGolden(t *testing.T) {
	got := initScript([]string{"/lib/modules/llc.ko", "/lib/modules/sch_netem.ko"}, []string{"-samples", "150", "it's"})
	golden := "testdata/init.golden"
	if *update {
		must(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("init script differs from %s (go test -update to accept):\n%s", golden, got)
	}
}

func TestVMArgs(t *testing.T) {
	vm := VM{Kernel: "k", Initrd: "i", MemoryMB: 512, CPUs: 1, Accel: "tcg", ICount: true}
	args := strings.Join(vm.Args(), " ")
	// loglevel=6: the banner Run watches for is a notice; at 5 it is not printed.
	for _, want := range []string{"-accel tcg -icount shift=0,sleep=off", "-m 512", "-smp 1", "-no-reboot", "-kernel k", "-initrd i", "loglevel=6"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	vm.Accel = "kvm" // icount is a tcg feature
	if args := fmt.Sprint(vm.Args()); strings.Contains(args, "icount") {
		t.Errorf("kvm args %s have -icount", args)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
