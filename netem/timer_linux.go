package netem

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// wakeTimer sleeps until an instant with the kernel's hrtimer precision. Go's timers
// sleep in the netpoller with millisecond resolution and fire 0.2-1 ms late, which is
// 5-20 % of a 5 ms one-way delay; a timerfd registered with the netpoller wakes the
// goroutine within tens of microseconds, without holding a thread.
type wakeTimer struct {
	f    *os.File
	once sync.Once
}

func newWakeTimer() (*wakeTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	return &wakeTimer{f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// sleepUntil returns at (or just after) at, or an error once close was called.
func (t *wakeTimer) sleepUntil(at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := rc.Control(func(fd uintptr) { serr = unix.TimerfdSettime(int(fd), 0, &spec, nil) }); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("timerfd_settime", serr)
	}
	var buf [8]byte
	_, err = t.f.Read(buf[:]) // the expiration count; we only care that it fired
	return err
}

// close wakes a sleeper (with an error) and releases the timer.
func (t *wakeTimer) close() { t.once.Do(func() { t.f.Close() }) }
