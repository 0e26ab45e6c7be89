package vmtest

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// Initramfs writes a cpio archive in the "newc" format the kernel unpacks into its
// root file system (Documentation/driver-api/early-userspace/buffer-format.rst).
// Errors are sticky: the first one is returned by Close.
type Initramfs struct {
	w   *bufio.Writer
	ino uint32
	err error
}

// NewInitramfs starts an archive on w.
func NewInitramfs(w io.Writer) *Initramfs {
	return &Initramfs{w: bufio.NewWriter(w), ino: 1}
}

// Dir adds a directory (mode 0755).
func (a *Initramfs) Dir(name string) { a.entry(name, 0o040755, nil) }

// File adds a regular file with the given permission bits.
func (a *Initramfs) File(name string, perm fs.FileMode, data []byte) {
	a.entry(name, 0o100000|uint32(perm.Perm()), data)
}

// Symlink adds a symbolic link name -> target.
func (a *Initramfs) Symlink(name, target string) { a.entry(name, 0o120777, []byte(target)) }

// Close writes the trailer and flushes.
func (a *Initramfs) Close() error {
	a.header("TRAILER!!!", 0, 0, 0)
	if a.err != nil {
		return a.err
	}
	return a.w.Flush()
}

func (a *Initramfs) entry(name string, mode uint32, data []byte) {
	name = strings.TrimPrefix(name, "/")
	if name == "" || strings.Contains(name, "\x00") {
		a.fail(fmt.Errorf("initramfs: bad entry name %q", name))
		return
	}
	a.ino++
	a.header(name, a.ino, mode, len(data))
	a.write(data)
	a.pad(len(data))
}

func (a *Initramfs) header(name string, ino, mode uint32, size int) {
	nlink := 1
	if mode&0o170000 == 0o040000 {
		nlink = 2
	}
	// magic, then 13 eight-digit hex fields: ino mode uid gid nlink mtime filesize
	// devmajor devminor rdevmajor rdevminor namesize check.
	h := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	a.write([]byte(h))
	a.write([]byte(name + "\x00"))
	a.pad(len(h) + len(name) + 1) // header and name are padded to 4 bytes together
}

func (a *Initramfs) pad(n int) {
	if r := n % 4; r != 0 {
		a.write(make([]byte, 4-r))
	}
}

func (a *Initramfs) write(b []byte) {
	if a.err == nil {
		_, a.err = a.w.Write(b)
	}
}

func (a *Initramfs) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}
