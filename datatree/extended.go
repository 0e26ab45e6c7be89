package datatree

import (
	"math"
	"slices"
)

// Container and TTL nodes are marked as ZooKeeper marks them, in the stored
// ephemeral owner (clients see 0): a container's is the smallest int64, a TTL
// node's is 0xff in the top byte and the TTL in ms in the low 40 bits. (Session
// ids never look like either: their top byte is the server id, 1..254.)
const (
	containerOwner int64 = math.MinInt64
	ttlMask        int64 = -1 << 56 // 0xff00000000000000
	// MaxTTL is the longest TTL, in ms (ZooKeeper's EphemeralType.TTL.maxValue).
	MaxTTL int64 = 1<<40 - 1
)

// ownerKind is what a node's ephemeral owner says it is.
type ownerKind uint8

const (
	persistentNode ownerKind = iota
	sessionNode              // an ephemeral: deleted with its session
	containerNode            // deleted once its last child is
	ttlNode                  // deleted once childless and unchanged for its TTL
)

func kindOf(owner int64) ownerKind {
	switch {
	case owner == 0:
		return persistentNode
	case owner == containerOwner:
		return containerNode
	case owner&ttlMask == ttlMask:
		return ttlNode
	}
	return sessionNode
}

// clientOwner is the ephemeral owner a client sees: a session's id, else 0 (ZooKeeper
// shows containers and TTL nodes as persistent).
func clientOwner(owner int64) int64 {
	if kindOf(owner) == sessionNode {
		return owner
	}
	return 0
}

func ttlOf(owner int64) int64 { return owner &^ ttlMask }

// IsContainer and IsTTL report the create modes of ZooKeeper's extended types.
func (m CreateMode) IsContainer() bool { return m == Container }

// IsTTL reports whether nodes of this mode carry a TTL.
func (m CreateMode) IsTTL() bool { return m == PersistentWithTTL || m == PersistentSequentialWithTTL }

// DeleteContainer removes a container or TTL node the reaper found due; it is a
// no-op error (NotEmpty, BadVersion) if the node has changed since, so the leader's
// choice and every replica's apply agree.
func DeleteContainer(path string) Op { return Op{Type: OpDeleteContainer, Path: path} }

// CreateTTL is a create of a TTL node (mode PersistentWithTTL or
// PersistentSequentialWithTTL), ttl in ms.
func CreateTTL(path string, data []byte, mode CreateMode, acl []ACL, ttl int64) Op {
	return Op{Type: OpCreate, Path: path, Data: data, Mode: mode, ACL: stored(acl), TTL: ttl}
}

// Reapable lists the container and TTL nodes due for deletion at now (ms since the
// epoch), as ZooKeeper's ContainerManager picks them: a childless container that
// has had a child, a childless TTL node unchanged for longer than its TTL.
func (t *Tree) Reapable(now int64) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for p := range t.extended {
		if n := t.nodes[p]; n != nil && due(n, now) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func due(n *node, now int64) bool {
	if len(n.children) > 0 {
		return false
	}
	switch kindOf(n.st.ephemeralOwner) {
	case containerNode:
		return n.st.cversion > 0
	case ttlNode:
		ttl := ttlOf(n.st.ephemeralOwner)
		return ttl != 0 && now-n.st.mtime > ttl
	}
	return false
}

// deleteContainer applies DeleteContainer.
func (t *Tree) deleteContainer(a *applier, op *Op) OpResult {
	r := OpResult{Type: OpDeleteContainer}
	if ValidatePath(op.Path) != nil || isSpecialPath(op.Path) {
		r.Err = BadArguments
		return r
	}
	n := t.nodes[op.Path]
	switch {
	case n == nil:
		r.Err = NoNode
	case len(n.children) > 0:
		r.Err = NotEmpty
	case !due(n, a.time):
		r.Err = BadVersion // ZooKeeper's answer for a node that is not a container
	default:
		t.remove(a, op.Path, n)
	}
	return r
}
