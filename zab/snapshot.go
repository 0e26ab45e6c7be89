package zab

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// StreamSnapshot sends the state a MsgSnap asks for: it reads r (the state machine's
// snapshot at snap.Zxid) to the end in chunks of chunkSize bytes and calls send with
// each MsgSnapChunk, the last one marked Last. An empty state is one empty chunk.
// It is a driver helper; the core never blocks.
func StreamSnapshot(ctx context.Context, snap Message, r io.Reader, chunkSize int, send func(Message) error) error {
	if snap.Type != MsgSnap {
		return fmt.Errorf("zab: stream snapshot: message is %v, not SNAP", snap.Type)
	}
	if chunkSize <= 0 {
		return fmt.Errorf("zab: stream snapshot: chunk size %d", chunkSize)
	}
	buf := make([]byte, chunkSize)
	next := make([]byte, chunkSize)
	n, err := io.ReadFull(r, buf)
	for seq := uint32(0); ; seq++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return send(snap.Chunk(seq, buf[:n:n], true))
		default:
			return fmt.Errorf("zab: stream snapshot %v: %w", snap.Zxid, err)
		}
		// A full chunk: read ahead to know whether it is the last.
		m, nerr := io.ReadFull(r, next)
		last := m == 0 && errors.Is(nerr, io.EOF)
		if err := send(snap.Chunk(seq, append([]byte(nil), buf[:n]...), last)); err != nil {
			return err
		}
		if last {
			return nil
		}
		buf, next, n, err = next, buf, m, nerr
	}
}
