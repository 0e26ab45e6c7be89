package workload

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestSendersNeverHoldBack: however many requests are still waiting on their servers
// (here 2,000, all of them until released), every pushed request has a sender at once,
// and the pool reuses the senders that finished rather than growing past its peak.
func TestSendersNeverHoldBack(t *testing.T) {
	const n = 2000
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(2 * n)
	p := &senders{queue: make(chan *request, 16)}
	p.do = func(*request) {
		started.Done()
		<-release
		done.Done()
	}
	for range n {
		p.push(&request{})
	}
	started.Wait() // every one of the n is in its sender's hands, none finished
	close(release)
	if got := waitIdle(t, p, n); got != n {
		t.Fatalf("%d senders for %d requests at once, want one each", got, n)
	}
	started.Add(n)
	for range n {
		p.push(&request{})
	}
	started.Wait()
	done.Wait()
	if got := waitIdle(t, p, n); got != n {
		t.Errorf("%d senders idle after a second wave of %d, want the first wave's %d (reused, none added)", got, n, n)
	}
	close(p.queue) // the senders end
}

// waitIdle waits until at least n senders are idle (each adds itself once its request
// returned) and says how many are; a deadline state, not a timing claim.
func waitIdle(t *testing.T, p *senders, n int64) int64 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); p.idle.Load() < n; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d senders idle after a minute", p.idle.Load(), n)
		}
	}
	return p.idle.Load()
}
