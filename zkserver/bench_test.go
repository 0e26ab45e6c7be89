package zkserver

import (
	"testing"
	"time"
)

// BenchmarkClientSet1KB: one go-zookeeper session writing 1 kB, one request at a
// time, against the standalone server over loopback.
func BenchmarkClientSet1KB(b *testing.B) {
	f := startServer(b, Config{}, nil)
	c := f.connect(b, 10*time.Second)
	data := make([]byte, 1024)
	if _, err := c.Create("/bench", data, 0, acl); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1024)
	for b.Loop() {
		if _, err := c.Set("/bench", data, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientSet1KBPipelined: the same session with many requests in flight
// (go-zookeeper pipelines concurrent calls on one connection).
func BenchmarkClientSet1KBPipelined(b *testing.B) {
	f := startServer(b, Config{}, nil)
	c := f.connect(b, 10*time.Second)
	data := make([]byte, 1024)
	if _, err := c.Create("/bench", data, 0, acl); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1024)
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Set("/bench", data, -1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkClientGet1KB: reads, served locally.
func BenchmarkClientGet1KB(b *testing.B) {
	f := startServer(b, Config{}, nil)
	c := f.connect(b, 10*time.Second)
	if _, err := c.Create("/bench", make([]byte, 1024), 0, acl); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := c.Get("/bench"); err != nil {
			b.Fatal(err)
		}
	}
}
