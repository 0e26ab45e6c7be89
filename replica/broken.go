package replica

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/polebench/polebench/zab"
)

// Variant names one server broken on purpose, for the checkers' tests only: one duty
// of the protocol done wrong, so that a check's power (how many seeds it takes to
// find the broken server) can be measured. The empty Variant is the sound server,
// which everything else runs. A variant is data in the server's Config (never a
// global): the other servers of the same process stay sound.
type Variant string

// The variants: each is one switch (zab.Unsafe, the storage's options, or what a
// restart reads back).
const (
	AckBeforeLog     Variant = "ack-before-log"
	VoteTwice        Variant = "vote-twice"
	SelfTwice        Variant = "self-twice"
	ApplyUncommitted Variant = "apply-uncommitted"
	ForgetEpoch      Variant = "forget-epoch"
	TrustTornTail    Variant = "trust-torn-tail"
)

// VariantInfo is a variant, the duty it breaks and the server the power table
// breaks (a follower variant on a follower of the initial leader, a leader variant
// on the initial leader, in two-dc: p5 leads p3 and p4).
type VariantInfo struct {
	Name Variant
	Duty string
	// Server is the server two-dc's matrix breaks.
	Server int
	// Sim says whether the simulator can carry it (a torn record is a storage
	// matter: the simulator's disk loses unsynced writes but tears none).
	Sim bool
}

// Variants is the matrix.
var Variants = []VariantInfo{
	{AckBeforeLog, "a follower acknowledges a proposal before its log write is durable", 3, true},
	{VoteTwice, "a follower promises the same epoch to two leaders (two votes in one election epoch)", 3, true},
	{SelfTwice, "a leader counts its own acknowledgement twice toward a quorum", 5, true},
	{ApplyUncommitted, "a follower applies (and answers for) a proposal before it is committed", 3, true},
	{ForgetEpoch, "a restarted server forgets its accepted and current epochs", 3, true},
	{TrustTornTail, "a restarted server reads a torn last log record as a write", 3, false},
}

// VariantOf is the variant named name.
func VariantOf(name string) (VariantInfo, error) {
	for _, v := range Variants {
		if string(v.Name) == name {
			return v, nil
		}
	}
	var names []string
	for _, v := range Variants {
		names = append(names, string(v.Name))
	}
	return VariantInfo{}, fmt.Errorf("no broken variant %q (%s)", name, strings.Join(names, ", "))
}

// ParseBroken reads "pN:VARIANT" (or "N:VARIANT"): one server broken.
func ParseBroken(s string) (int, Variant, error) {
	who, name, ok := strings.Cut(s, ":")
	id, err := strconv.Atoi(strings.TrimPrefix(who, "p"))
	if !ok || err != nil || id < 1 {
		return 0, "", fmt.Errorf("--broken %q: want pN:VARIANT, such as p3:%s", s, AckBeforeLog)
	}
	v, err := VariantOf(name)
	if err != nil {
		return 0, "", fmt.Errorf("--broken %q: %w", s, err)
	}
	return id, v.Name, nil
}

// unsafe is what v changes in the broadcast core.
func (v Variant) unsafe() zab.Unsafe {
	return zab.Unsafe{
		AckBeforeDurable: v == AckBeforeLog,
		ReackEpoch:       v == VoteTwice,
		SelfTwice:        v == SelfTwice,
		CommitOnReceipt:  v == ApplyUncommitted,
	}
}

// restored is what a server broken by v reads back of its persisted state.
func (v Variant) restored(p zab.Persisted) zab.Persisted {
	if v == ForgetEpoch {
		p.HardState = zab.HardState{}
	}
	return p
}

// SimVariants are the variants the simulator carries.
func SimVariants() []VariantInfo {
	return slices.DeleteFunc(slices.Clone(Variants), func(v VariantInfo) bool { return !v.Sim })
}
