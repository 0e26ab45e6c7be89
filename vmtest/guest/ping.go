package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// An ICMP ping between namespaces, timed by the kernel where it can be: the target's
// kernel answers in softirq (no program on that side to be scheduled), and the reply
// is stamped when it arrives (SO_TIMESTAMPNS), so the pinger's own wake-up latency,
// large under software emulation, stays out of the RTT. The send time is read just
// before the send system call, which enqueues the packet on the spot.

// pingSpec says how one pair is measured.
type pingSpec struct {
	Samples  int           // replies kept
	Warmup   int           // first replies dropped (ARP, cold caches)
	Interval time.Duration // between sends
	Offset   time.Duration // start delay, to spread concurrent pairs
	Grace    time.Duration // wait for stragglers after the last send
}

const (
	icmpEchoRequest = 8
	icmpEchoReply   = 0
	pingPayload     = 16 // send time (unix ns) and sequence number
)

// openICMP opens a raw ICMP socket in a's namespace connected to b, so it receives
// only b's packets, with receive timestamps and a short receive timeout.
func openICMP(a, b *node) (int, error) {
	fd := -1
	err := inNS(a.ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("raw ICMP socket: %w", err)
	}
	tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
	err = errors.Join(
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
		unix.Bind(fd, &unix.SockaddrInet4{Addr: a.addr.As4()}),
		unix.Connect(fd, &unix.SockaddrInet4{Addr: b.addr.As4()}),
	)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// echoRequest builds an ICMP echo request carrying the send time.
func echoRequest(id, seq uint16, sent int64) []byte {
	m := make([]byte, 8+pingPayload)
	m[0] = icmpEchoRequest
	binary.BigEndian.PutUint16(m[4:], id)
	binary.BigEndian.PutUint16(m[6:], seq)
	binary.BigEndian.PutUint64(m[8:], uint64(sent))
	binary.BigEndian.PutUint64(m[16:], uint64(seq))
	binary.BigEndian.PutUint16(m[2:], checksum(m))
	return m
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// parseEchoReply returns the sequence number and send time of an echo reply with
// the given id, from a raw socket's read (IPv4 header first).
func parseEchoReply(pkt []byte, id uint16) (seq uint16, sent int64, ok bool) {
	if len(pkt) < 20 {
		return 0, 0, false
	}
	ihl := int(pkt[0]&0x0f) * 4
	if ihl < 20 || len(pkt) < ihl+8+pingPayload {
		return 0, 0, false
	}
	m := pkt[ihl:]
	if m[0] != icmpEchoReply || binary.BigEndian.Uint16(m[4:]) != id {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(m[6:]), int64(binary.BigEndian.Uint64(m[8:])), true
}

// rxTimestamp finds the SCM_TIMESTAMPNS control message: when the kernel received
// the packet, in unix ns.
func rxTimestamp(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return sec*1e9 + nsec, true
		}
	}
	return 0, false
}

// ping measures RTTs from node a to node b with ICMP echo id. It returns the RTTs of
// the replies after the warm-up, and how many requests after the warm-up were sent.
func ping(ctx context.Context, a, b *node, id uint16, s pingSpec) (rtts []time.Duration, sent int, err error) {
	fd, err := openICMP(a, b)
	if err != nil {
		return nil, 0, fmt.Errorf("p%d->p%d: %w", a.id, b.id, err)
	}
	defer unix.Close(fd)

	total := s.Warmup + s.Samples
	start := time.Now()
	end := start.Add(s.Offset + time.Duration(total)*s.Interval + s.Grace)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // receiver: stops at the deadline or when every reply is in
		defer wg.Done()
		buf, oob := make([]byte, 1500), make([]byte, 256)
		seen := map[uint16]bool{}
		for len(seen) < total && time.Now().Before(end) && ctx.Err() == nil {
			n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
			if err != nil {
				continue // the receive timeout, or EINTR
			}
			seq, sentAt, ok := parseEchoReply(buf[:n], id)
			if !ok || seen[seq] || int(seq) >= total {
				continue
			}
			seen[seq] = true
			rx, ok := rxTimestamp(oob[:oobn])
			if !ok {
				rx = time.Now().UnixNano()
			}
			if int(seq) >= s.Warmup {
				rtts = append(rtts, time.Duration(rx-sentAt))
			}
		}
	}()

	t := time.NewTimer(s.Offset)
	defer t.Stop()
	for i := 0; i < total; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil, sent, ctx.Err()
		case <-t.C:
		}
		if _, err := unix.Write(fd, echoRequest(id, uint16(i), time.Now().UnixNano())); err != nil {
			wg.Wait()
			return nil, sent, fmt.Errorf("p%d->p%d: send: %w", a.id, b.id, err)
		}
		if i >= s.Warmup {
			sent++
		}
		// Absolute schedule: a late wake-up does not push later sends back.
		t.Reset(time.Until(start.Add(s.Offset + time.Duration(i+1)*s.Interval)))
	}
	wg.Wait()
	return rtts, sent, nil
}
