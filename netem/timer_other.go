//go:build !linux

package netem

import (
	"net"
	"sync"
	"time"
)

// wakeTimer falls back to Go's timers where there is no timerfd (less precise: they
// fire a few hundred microseconds late).
type wakeTimer struct {
	stop chan struct{}
	once sync.Once
}

func newWakeTimer() (*wakeTimer, error) { return &wakeTimer{stop: make(chan struct{})}, nil }

func (t *wakeTimer) sleepUntil(at int64) error {
	tm := time.NewTimer(time.Duration(at - Now()))
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-t.stop:
		return net.ErrClosed
	}
}

func (t *wakeTimer) close() { t.once.Do(func() { close(t.stop) }) }
