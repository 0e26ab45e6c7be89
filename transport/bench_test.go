package transport

import (
	"context"
	"net"
	"testing"

	"github.com/polebench/polebench/netem"
)

// BenchmarkStampedDelivery is a user-space link's per-message cost end to end on
// loopback, with a zero delay: stamp, write, read, hold until the stamp, hand over.
func BenchmarkStampedDelivery(b *testing.B) {
	lns := [2]net.Listener{}
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns[i] = ln
	}
	sched := func(int, Channel, int) (int64, int64, error) {
		now := netem.Now()
		return now, now, nil
	}
	tx := New(context.Background(), lns[0], Config{ID: 1, Peers: map[int]string{2: lns[1].Addr().String()}, Schedule: sched, QueueLen: 1 << 16})
	rx := New(context.Background(), lns[1], Config{ID: 2, Peers: map[int]string{1: lns[0].Addr().String()}})
	defer tx.Close()
	defer rx.Close()
	payload := make([]byte, 64)
	tx.Send(2, Broadcast, payload)
	<-rx.Recv()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for !tx.Send(2, Broadcast, payload) {
		}
		<-rx.Recv()
	}
}
