package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// UDP streams between two namespaces for the impairments phase (impair.go). Every
// datagram carries its sequence number and its send time (unix ns, read just before
// the send system call); the receiver takes the kernel's receive stamp
// (SO_TIMESTAMPNS, taken when the packet reaches the receiving namespace's eth0, in
// softirq), so the receiving program's own wake-up stays out of the one-way delay.
// Both ends run on one kernel, so they read one clock.

// udpSpec says how one stream is sent.
type udpSpec struct {
	Port  int           // the receiver's UDP port
	Count int           // datagrams sent
	Size  int           // payload bytes, at least udpHeader
	Burst int           // datagrams sent back to back (with Gap > 0)
	Gap   time.Duration // between the starts of bursts; 0: as fast as the socket takes them
	Start time.Time     // when the first burst goes (zero: at once)
	Grace time.Duration // how long after the last send the receiver reads its buffer
}

// udpHeader is the datagram's own header: sequence number and send time.
const udpHeader = 16

// arrival is one datagram received.
type arrival struct {
	Seq        int
	Sent, Recv int64 // unix ns
}

// OWD is the datagram's one-way delay in ms.
func (a arrival) OWD() float64 { return float64(a.Recv-a.Sent) / 1e6 }

// udpResult is what a stream delivered.
type udpResult struct {
	Sent     int       // datagrams the sender handed to the kernel
	Arrivals []arrival // in order of arrival, duplicates dropped
	Dups     int       // datagrams received more than once
	// RcvDrops is what the receiving socket itself dropped (SO_RXQ_OVFL): losses
	// that are not the link's.
	RcvDrops uint32
}

// putDatagram writes the header into b.
func putDatagram(b []byte, seq int, sent int64) {
	binary.BigEndian.PutUint64(b, uint64(seq))
	binary.BigEndian.PutUint64(b[8:], uint64(sent))
}

// parseDatagram reads the header of a received datagram.
func parseDatagram(b []byte) (seq int, sent int64, ok bool) {
	if len(b) < udpHeader {
		return 0, 0, false
	}
	s := binary.BigEndian.Uint64(b)
	if s > 1<<31 {
		return 0, 0, false
	}
	return int(s), int64(binary.BigEndian.Uint64(b[8:])), true
}

// rxDrops finds the SO_RXQ_OVFL control message: the socket's drop counter.
func rxDrops(oob []byte) (uint32, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return binary.NativeEndian.Uint32(m.Data), true
		}
	}
	return 0, false
}

// openUDP opens a UDP socket in n's namespace bound to its address and port.
func openUDP(n *node, port int) (int, error) {
	fd := -1
	err := inNS(n.ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("p%d: UDP socket: %w", n.id, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: n.addr.As4(), Port: port}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("p%d: bind UDP port %d: %w", n.id, port, err)
	}
	return fd, nil
}

// flow is one stream's two sockets: the receiver's in b's namespace, the sender's
// in a's, connected to it.
type flow struct {
	a, b       *node
	rfd, sfd   int
	sent, port int
}

func openFlow(a, b *node, port int) (_ *flow, err error) {
	f := &flow{a: a, b: b, port: port, rfd: -1, sfd: -1}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if f.rfd, err = openUDP(b, port); err != nil {
		return nil, err
	}
	// A receive buffer for the whole stream: it is read after the stream.
	if err := errors.Join(
		unix.SetsockoptInt(f.rfd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20),
		unix.SetsockoptInt(f.rfd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
		unix.SetsockoptInt(f.rfd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1),
	); err != nil {
		return nil, fmt.Errorf("p%d: receiver options: %w", b.id, err)
	}
	if f.sfd, err = openUDP(a, 0); err != nil {
		return nil, err
	}
	if err := unix.Connect(f.sfd, &unix.SockaddrInet4{Addr: b.addr.As4(), Port: port}); err != nil {
		return nil, fmt.Errorf("p%d: connect to p%d: %w", a.id, b.id, err)
	}
	return f, nil
}

func (f *flow) close() {
	for _, fd := range []int{f.rfd, f.sfd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// send sends datagram number f.sent, stamped with the time just before the call.
func (f *flow) send(msg []byte) error {
	for {
		putDatagram(msg, f.sent, time.Now().UnixNano())
		_, err := unix.Write(f.sfd, msg)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("p%d->p%d: send: %w", f.a.id, f.b.id, err)
		}
		f.sent++
		return nil
	}
}

// drain reads what the receiver's buffer holds, datagrams numbered below count.
// The receiver reads only after the stream: the kernel stamped every datagram on
// arrival, and no program woke per datagram meanwhile (its CPU time would be in the
// way of the measurement, and costs much under emulation).
func (f *flow) drain(count int) (udpResult, error) {
	res := udpResult{Sent: min(f.sent, count)}
	buf, oob := make([]byte, 65536), make([]byte, 256)
	seen := make([]bool, count)
	res.Arrivals = make([]arrival, 0, count)
	for {
		n, oobn, _, _, err := unix.Recvmsg(f.rfd, buf, oob, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return res, nil // EAGAIN: all read
		}
		if d, ok := rxDrops(oob[:oobn]); ok {
			res.RcvDrops = d
		}
		seq, sent, ok := parseDatagram(buf[:n])
		if !ok || seq >= count {
			continue
		}
		if seen[seq] {
			res.Dups++
			continue
		}
		seen[seq] = true
		rx, ok := rxTimestamp(oob[:oobn])
		if !ok {
			return res, fmt.Errorf("p%d: datagram %d without a receive timestamp", f.b.id, seq)
		}
		res.Arrivals = append(res.Arrivals, arrival{Seq: seq, Sent: sent, Recv: rx})
	}
}

// udpStream sends s from a to b and returns what b received.
func udpStream(ctx context.Context, a, b *node, s udpSpec) (udpResult, error) {
	if s.Size < udpHeader || s.Count < 1 || s.Burst < 1 {
		return udpResult{}, fmt.Errorf("udp stream: size %d, count %d, burst %d", s.Size, s.Count, s.Burst)
	}
	f, err := openFlow(a, b, s.Port)
	if err != nil {
		return udpResult{}, err
	}
	defer f.close()
	start := s.Start
	if start.IsZero() {
		start = time.Now()
	}
	msg := make([]byte, s.Size)
	for i := 0; i < s.Count; i++ {
		if s.Gap > 0 && i%s.Burst == 0 {
			// Absolute schedule: a late wake-up does not push later bursts back.
			if d := time.Until(start.Add(time.Duration(i/s.Burst) * s.Gap)); d > 0 {
				time.Sleep(d)
			}
		}
		if err := ctx.Err(); err != nil {
			return udpResult{}, err
		}
		if err := f.send(msg); err != nil {
			return udpResult{}, err
		}
	}
	time.Sleep(s.Grace)
	return f.drain(s.Count)
}

// poissonStreams sends count datagrams of size bytes over each pair (from, to) at
// once, the sends of all of them one Poisson process of mean gap meanGap/len(pairs),
// each send going to a pair drawn at random: so each pair's sends are a Poisson
// process of mean gap meanGap, independent of the others'. One thread sends them
// all, sleeping to each instant with clock_nanosleep (exact to the microsecond,
// where a Go timer may be a millisecond late in an idle process). A pair that has
// sent count goes on until all have, its extra datagrams not counted.
func poissonStreams(ctx context.Context, pairs [][2]*node, port, count, size int, meanGap, grace time.Duration, seed uint64) ([]udpResult, error) {
	var flows []*flow
	defer func() {
		for _, f := range flows {
			f.close()
		}
	}()
	for i, p := range pairs {
		f, err := openFlow(p[0], p[1], port+i)
		if err != nil {
			return nil, err
		}
		flows = append(flows, f)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(port)))
	msg := make([]byte, size)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, err
	}
	next := ts.Nano()
	gap := float64(meanGap) / float64(len(flows))
	done := func() bool {
		for _, f := range flows {
			if f.sent < count {
				return false
			}
		}
		return true
	}
	for !done() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next += int64(rng.ExpFloat64() * gap)
		at := unix.NsecToTimespec(next)
		for {
			if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &at, nil); !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err := flows[rng.IntN(len(flows))].send(msg); err != nil {
			return nil, err
		}
	}
	time.Sleep(grace)
	var out []udpResult
	for _, f := range flows {
		r, err := f.drain(count)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
