// Package zxid is the broadcast's transaction id (ZooKeeper's zxid) and its epoch. It
// is a leaf so that whatever carries zxids without the broadcast core carries them as
// this one type: the election core (its history oracle scores a process by its last
// zxid), the run's events and poled's traces. Package zab has both as zab.Zxid and
// zab.Epoch.
package zxid

import "fmt"

// Zxid identifies a transaction: the epoch in the high 32 bits, a counter in the low 32.
// Its JSON is the number; its String is hex, as ZooKeeper writes zxids.
type Zxid uint64

// Epoch is the broadcast's epoch: a leader's term, the high 32 bits of the zxids it
// proposes. It is not the election's epoch (pole.Epoch), which counts POLE's
// elections.
type Epoch uint32

// Make builds a zxid from an epoch and a counter.
func Make(epoch Epoch, counter uint32) Zxid { return Zxid(uint64(epoch)<<32 | uint64(counter)) }

// Epoch is the epoch part of z.
func (z Zxid) Epoch() Epoch { return Epoch(z >> 32) }

// Counter is the counter part of z.
func (z Zxid) Counter() uint32 { return uint32(z) }

func (z Zxid) String() string { return fmt.Sprintf("0x%x", uint64(z)) }
