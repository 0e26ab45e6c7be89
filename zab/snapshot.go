package zab

import (
	"errors"
	"fmt"
)

// ChunkWriter cuts the state a MsgSnap asks for, written to it as a stream (e.g. by
// the state machine's snapshot writer), into MsgSnapChunks of a fixed size, and calls
// send with each as soon as the next byte shows it is not the last; Close sends the
// last one, marked Last (an empty state is one empty chunk). The chunks' Data reuses
// two buffers: send must not keep it after it returns (encode it, or copy it), so a
// large state costs no new memory per chunk. It is a driver helper; the core never
// blocks.
type ChunkWriter struct {
	snap  Message
	size  int
	seq   uint32
	buf   []byte // the chunk being filled
	full  []byte // a full chunk held back until it is known not to be the last
	spare []byte // the buffer of the chunk sent last
	send  func(Message) error
	err   error
}

// NewChunkWriter starts streaming snap's state in chunks of size bytes.
func NewChunkWriter(snap Message, size int, send func(Message) error) (*ChunkWriter, error) {
	if snap.Type != MsgSnap {
		return nil, fmt.Errorf("zab: snapshot chunks: message is %v, not SNAP", snap.Type)
	}
	if size <= 0 {
		return nil, fmt.Errorf("zab: snapshot chunks: chunk size %d", size)
	}
	return &ChunkWriter{snap: snap, size: size, send: send}, nil
}

// errClosed: a ChunkWriter sends nothing after its last chunk.
var errClosed = errors.New("zab: snapshot chunks: write after close")

// Write implements io.Writer; it returns the first error send returned.
func (w *ChunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for w.err == nil && len(p) > 0 {
		if w.full != nil {
			w.emit(w.full, false)
			w.full, w.spare = nil, w.full
			continue
		}
		if w.buf == nil {
			if w.buf, w.spare = w.spare[:0], nil; w.buf == nil {
				w.buf = make([]byte, 0, w.size)
			}
		}
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf, p = w.buf[:len(w.buf)+k], p[k:]
		if len(w.buf) == w.size {
			w.full, w.buf = w.buf, nil
		}
	}
	if w.err != nil {
		return n - len(p), w.err
	}
	return n, nil
}

func (w *ChunkWriter) emit(data []byte, last bool) {
	if err := w.send(w.snap.Chunk(w.seq, data, last)); err != nil {
		w.err = err
	}
	w.seq++
}

// Close sends the last chunk.
func (w *ChunkWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	last := w.buf
	if w.full != nil {
		last = w.full
	}
	w.emit(last, true)
	if w.err == nil {
		w.err = errClosed
		return nil
	}
	return w.err
}
