package netem

import (
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// wakeTimer sleeps until an instant with the kernel timer's precision. A Go timer
// alone fires up to a millisecond late when the process idles: the runtime then waits
// in epoll with a timeout in whole milliseconds. A timer file read through the
// netpoller is on time then, but starves when every P is busy (the netpoller is polled
// only every 10 ms), and a sleep in a system call holds a P from the process's other
// goroutines. So a Go timer waits (the scheduler checks timers however busy it is),
// and a timerfd in the netpoller, armed for the same instant, wakes an idle runtime
// then, which then runs the timer.
type wakeTimer struct {
	f    *os.File // the timerfd: nobody reads it; each expiry wakes the netpoller
	rc   syscall.RawConn
	tm   *time.Timer
	stop chan struct{}
	once sync.Once
}

// kick is how much after the instant the timerfd fires: the Go timer must be due by
// then (the two clocks' pairing is good to tens of nanoseconds), or the runtime would
// go back to a millisecond wait.
const kick = 2 * time.Microsecond

func newWakeTimer() (*wakeTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	tm := time.NewTimer(time.Hour)
	tm.Stop()
	return &wakeTimer{f: f, rc: rc, tm: tm, stop: make(chan struct{})}, nil
}

// sleepUntil returns at (or just after) the Now instant at, or an error once close
// was called.
func (t *wakeTimer) sleepUntil(at int64) error {
	d := time.Duration(at - Now())
	if d <= 0 {
		return nil
	}
	var serr error
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at + int64(kick))}
	if err := t.rc.Control(func(fd uintptr) {
		serr = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME, &spec, nil)
	}); err != nil {
		return net.ErrClosed
	}
	if serr != nil {
		return os.NewSyscallError("timerfd_settime", serr)
	}
	t.tm.Reset(d)
	select {
	case <-t.tm.C:
		return nil
	case <-t.stop:
		t.tm.Stop()
		return net.ErrClosed
	}
}

// close wakes a sleeper (with an error) and releases the timer.
func (t *wakeTimer) close() {
	t.once.Do(func() {
		close(t.stop)
		t.f.Close()
	})
}
