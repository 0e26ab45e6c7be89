// Package datatree is poled's replicated state: ZooKeeper's znode tree with its
// stat semantics, sessions and ephemerals, the transactions that change it,
// and its snapshot format. Apply is deterministic: every replica that applies
// the same txns at the same zxids ends in the same state with the same results,
// so requests are validated at apply time and need no separate "prep" step.
package datatree

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/polebench/polebench/zab"
)

// pstat is the stat as ZooKeeper persists it (StatPersisted). cversion counts
// child creates only; the Stat a client sees derives cversion = 2*creates -
// children, i.e. creates + deletes (DataNode.copyStat), and the sequential
// suffix is the stored create count.
type pstat struct {
	czxid, mzxid, pzxid         int64
	ctime, mtime                int64
	version, cversion, aversion int32
	ephemeralOwner              int64
}

type node struct {
	data     []byte // never modified in place: setData replaces it
	acl      []ACL  // nil: the open ACL; never modified in place: setACL replaces it
	st       pstat
	children map[string]struct{} // child names; nil when none
}

func (n *node) stat() Stat {
	nc := int32(len(n.children))
	return Stat{
		Czxid: n.st.czxid, Mzxid: n.st.mzxid, Ctime: n.st.ctime, Mtime: n.st.mtime,
		Version: n.st.version, Cversion: n.st.cversion*2 - nc, Aversion: n.st.aversion,
		EphemeralOwner: clientOwner(n.st.ephemeralOwner), DataLength: int32(len(n.data)),
		NumChildren: nc, Pzxid: n.st.pzxid,
	}
}

type session struct {
	timeout    int32
	ephemerals map[string]struct{}
}

// SessionInfo describes one live session.
type SessionInfo struct {
	ID         int64
	Timeout    int32    // ms
	Ephemerals []string // sorted
}

// Tree is the znode tree. It is safe for concurrent use: reads take a shared
// lock, Apply an exclusive one. Byte slices it returns must not be modified.
type Tree struct {
	mu         sync.RWMutex
	nodes      map[string]*node
	sessions   map[int64]*session
	lastZxid   zab.Zxid
	size       int64 // sum of len(path)+len(data): ZooKeeper's approximate data size
	ephemerals int
	// extended are the container and TTL nodes, the reaper's candidates.
	extended map[string]struct{}
	// views are snapshots being written: Apply saves a node's state as of a view's
	// start before it first changes the node (copy on write).
	views []*View
	// events is the array Apply's results carry their events in, reused: an array per
	// write was most of the simulator's allocations (45 trees apply every write).
	events []Event
}

// New returns the tree a fresh ZooKeeper 3.8 server starts with: "/",
// "/zookeeper", "/zookeeper/quota" and "/zookeeper/config", all with zero stats.
func New() *Tree {
	t := &Tree{nodes: map[string]*node{}, sessions: map[int64]*session{}, extended: map[string]struct{}{}}
	t.nodes["/"] = &node{}
	t.size = 1
	for _, p := range []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		t.link(p, &node{})
	}
	return t
}

// touch saves path's current state into every open view that has not saved it yet,
// before Apply changes it (nil: it did not exist).
func (t *Tree) touch(path string) {
	for _, v := range t.views {
		if _, ok := v.pre[path]; ok {
			continue
		}
		var saved *node
		if n := t.nodes[path]; n != nil {
			c := *n // data is never modified in place; children are not in a snapshot
			saved = &c
		}
		v.pre[path] = saved
	}
}

// link inserts n at path under its (existing) parent and does the accounting.
func (t *Tree) link(path string, n *node) {
	t.touch(path)
	t.touch(parentOf(path))
	parent := t.nodes[parentOf(path)]
	if parent.children == nil {
		parent.children = map[string]struct{}{}
	}
	parent.children[baseOf(path)] = struct{}{}
	t.nodes[path] = n
	t.size += int64(len(path) + len(n.data))
	switch kindOf(n.st.ephemeralOwner) {
	case sessionNode:
		t.sessions[n.st.ephemeralOwner].ephemerals[path] = struct{}{}
		t.ephemerals++
	case containerNode, ttlNode:
		t.extended[path] = struct{}{}
	}
}

// unlink is the exact inverse of link.
func (t *Tree) unlink(path string, n *node) {
	t.touch(path)
	t.touch(parentOf(path))
	parent := t.nodes[parentOf(path)]
	delete(parent.children, baseOf(path))
	if len(parent.children) == 0 {
		parent.children = nil
	}
	delete(t.nodes, path)
	t.size -= int64(len(path) + len(n.data))
	switch kindOf(n.st.ephemeralOwner) {
	case sessionNode:
		delete(t.sessions[n.st.ephemeralOwner].ephemerals, path)
		t.ephemerals--
	case containerNode, ttlNode:
		delete(t.extended, path)
	}
}

func baseOf(path string) string {
	p := parentOf(path)
	if p == "/" {
		return path[1:]
	}
	return path[len(p)+1:]
}

// OpResult is the outcome of one operation: the code, the created path
// (create), the node's stat after the change (create, setData).
type OpResult struct {
	Type OpType // for failed multi sub-ops: OpError, as ZooKeeper's ErrorResult
	Err  Code
	Path string
	Stat Stat
}

// Result is what Apply returns: the same on every replica.
type Result struct {
	Zxid zab.Zxid
	OpResult
	// Ops holds one result per multi sub-op. When the multi fails (Err is the
	// first failing op's code) the ops before it are {OpError, Ok}, the failing
	// one {OpError, code}, the rest {OpError, RuntimeInconsistency}, as ZooKeeper.
	Ops []OpResult
	// Events are the watch triggers, in order; empty unless Err is Ok. They are the
	// tree's: valid until its next Apply (the replica fires the watches at once).
	Events []Event
}

// applier carries one Apply call's context; undo is non-nil inside a multi.
type applier struct {
	zxid    int64
	time    int64
	session int64
	auth    []ID
	events  []Event
	undo    []func()
}

// onUndo records how to undo a change inside a multi. Callers check a.undoing()
// first: building the closure allocates, and outside a multi nothing undoes.
func (a *applier) onUndo(f func()) { a.undo = append(a.undo, f) }

func (a *applier) undoing() bool { return a.undo != nil }

// Apply applies txn at zxid and returns its result. zxid must be above
// LastZxid; otherwise nothing changes and the result is RuntimeInconsistency.
// A failed op still consumes its zxid (LastZxid advances), as in ZooKeeper.
// Apply keeps references to the txn's data slices.
func (t *Tree) Apply(zxid zab.Zxid, txn Txn) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := Result{Zxid: zxid}
	r.Type = txn.Type
	if zxid <= t.lastZxid {
		r.Err = RuntimeInconsistency
		return r
	}
	t.lastZxid = zxid
	a := &applier{zxid: int64(zxid), time: txn.Time, session: txn.Session, auth: txn.Auth, events: t.events[:0]}
	switch txn.Type {
	case OpNoop:
	case OpCreateSession:
		r.Err = t.createSession(txn.Session, txn.Timeout)
	case OpCloseSession:
		t.closeSession(a, txn.Session)
	case OpMulti:
		r.Err, r.Ops = t.multi(a, txn.Ops)
	case OpDeleteContainer:
		if txn.Session != 0 {
			r.Err = BadArguments // the server's own txn
			break
		}
		r.OpResult = t.deleteContainer(a, &txn.Op)
	case OpCreate, OpDelete, OpSetData, OpCheck, OpSetACL:
		if !t.live(txn.Session) {
			r.Err = SessionExpired
			break
		}
		r.OpResult = t.op(a, &txn.Op)
	default:
		r.Err = Unimplemented
	}
	if r.Err == Ok && len(a.events) > 0 {
		r.Events = a.events
	}
	if cap(a.events) > cap(t.events) {
		t.events = a.events[:0]
	}
	return r
}

// ApplyEncoded decodes a broadcast transaction and applies it at its zxid.
func (t *Tree) ApplyEncoded(zt zab.Txn) (Result, error) {
	txn, err := UnmarshalTxn(zt.Data)
	if err != nil {
		return Result{}, fmt.Errorf("txn %v: %w", zt.Zxid, err)
	}
	return t.Apply(zt.Zxid, txn), nil
}

// live reports whether requests of this session may change the tree; 0 is the server.
func (t *Tree) live(id int64) bool {
	_, ok := t.sessions[id]
	return id == 0 || ok
}

func (t *Tree) createSession(id int64, timeout int32) Code {
	if id == 0 || timeout <= 0 {
		return BadArguments
	}
	if s, ok := t.sessions[id]; ok {
		s.timeout = timeout // a re-registration (e.g. replayed) only refreshes the timeout
		return Ok
	}
	t.sessions[id] = &session{timeout: timeout, ephemerals: map[string]struct{}{}}
	return Ok
}

// closeSession deletes the session's ephemerals (in path order) and the session.
// Closing an unknown session is a no-op, so a duplicate expiry is harmless.
func (t *Tree) closeSession(a *applier, id int64) {
	s, ok := t.sessions[id]
	if !ok {
		return
	}
	for _, p := range slices.Sorted(maps.Keys(s.ephemerals)) {
		t.remove(a, p, t.nodes[p])
	}
	delete(t.sessions, id)
}

func (t *Tree) multi(a *applier, ops []Op) (Code, []OpResult) {
	if len(ops) == 0 {
		return Ok, nil
	}
	a.undo = []func(){}
	res := make([]OpResult, len(ops))
	failed, code := -1, Ok
	if !t.live(a.session) {
		failed, code = 0, SessionExpired // ZooKeeper's first sub-op fails its session check
	}
	for i := 0; failed < 0 && i < len(ops); i++ {
		switch ops[i].Type {
		case OpCreate, OpDelete, OpSetData, OpCheck:
			res[i] = t.op(a, &ops[i])
		default:
			res[i] = OpResult{Type: ops[i].Type, Err: BadArguments}
		}
		if res[i].Err != Ok {
			failed, code = i, res[i].Err
		}
	}
	if failed < 0 {
		return Ok, res
	}
	for i := len(a.undo) - 1; i >= 0; i-- {
		a.undo[i]()
	}
	a.events = nil
	for i := range res {
		res[i] = OpResult{Type: OpError, Err: Ok}
		if i == failed {
			res[i].Err = code
		} else if i > failed {
			res[i].Err = RuntimeInconsistency
		}
	}
	return code, res
}

func (t *Tree) op(a *applier, op *Op) OpResult {
	switch op.Type {
	case OpCreate:
		return t.create(a, op)
	case OpDelete:
		return t.delete(a, op)
	case OpSetData:
		return t.setData(a, op)
	case OpSetACL:
		return t.setACL(a, op)
	default:
		return t.check(a, op)
	}
}

// allowed checks the requester's permission on n: the server (session 0) has every one.
func (a *applier) allowed(n *node, perm int32) bool {
	return n.acl == nil || a.session == 0 || Allowed(n.acl, a.auth, perm)
}

func (t *Tree) create(a *applier, op *Op) OpResult {
	r := OpResult{Type: OpCreate}
	seq := op.Mode.IsSequential()
	if !op.Mode.valid() || (op.Mode.IsEphemeral() && a.session == 0) || (op.Mode.IsTTL() != (op.TTL != 0)) ||
		op.TTL < 0 || op.TTL > MaxTTL || len(op.Data) > MaxDataSize || validateCreatePath(op.Path, seq) != nil {
		r.Err = BadArguments
		return r
	}
	acl, code := fixACL(op.ACL, a.auth)
	if code != Ok {
		r.Err = code
		return r
	}
	parentPath := parentOf(op.Path)
	parent := t.nodes[parentPath]
	if parent == nil {
		r.Err = NoNode
		return r
	}
	if !a.allowed(parent, PermCreate) {
		r.Err = NoAuth
		return r
	}
	path := op.Path
	if seq {
		path += fmt.Sprintf("%010d", parent.st.cversion)
	}
	if t.nodes[path] != nil {
		r.Err = NodeExists
		return r
	}
	if kindOf(parent.st.ephemeralOwner) == sessionNode {
		r.Err = NoChildrenForEphemerals
		return r
	}
	var owner int64
	switch {
	case op.Mode.IsEphemeral():
		owner = a.session
	case op.Mode.IsContainer():
		owner = containerOwner
	case op.Mode.IsTTL():
		owner = ttlMask | op.TTL
	}
	n := &node{data: op.Data, acl: acl, st: pstat{
		czxid: a.zxid, mzxid: a.zxid, pzxid: a.zxid, ctime: a.time, mtime: a.time, ephemeralOwner: owner,
	}}
	t.touch(parentPath)
	old := parent.st
	parent.st.cversion++
	parent.st.pzxid = a.zxid
	t.link(path, n)
	if a.undoing() {
		a.onUndo(func() { t.unlink(path, n); parent.st = old })
	}
	a.events = append(a.events, Event{EventNodeCreated, path}, Event{EventNodeChildrenChanged, parentPath})
	r.Path, r.Stat = path, n.stat()
	return r
}

func (t *Tree) delete(a *applier, op *Op) OpResult {
	r := OpResult{Type: OpDelete}
	if ValidatePath(op.Path) != nil || isSpecialPath(op.Path) {
		r.Err = BadArguments
		return r
	}
	n := t.nodes[op.Path]
	parent := t.nodes[parentOf(op.Path)]
	switch {
	case parent == nil:
		r.Err = NoNode
	case !a.allowed(parent, PermDelete):
		r.Err = NoAuth
	case n == nil:
		r.Err = NoNode
	case op.Version != -1 && op.Version != n.st.version:
		r.Err = BadVersion
	case len(n.children) > 0:
		r.Err = NotEmpty
	default:
		t.remove(a, op.Path, n)
	}
	return r
}

// remove deletes a childless node: the parent's pzxid moves, its stored
// cversion does not (ZooKeeper's deleteNode).
func (t *Tree) remove(a *applier, path string, n *node) {
	parentPath := parentOf(path)
	parent := t.nodes[parentPath]
	t.touch(parentPath)
	old := parent.st
	if a.zxid > parent.st.pzxid {
		parent.st.pzxid = a.zxid
	}
	t.unlink(path, n)
	if a.undoing() {
		a.onUndo(func() { t.link(path, n); parent.st = old })
	}
	a.events = append(a.events, Event{EventNodeDeleted, path}, Event{EventNodeChildrenChanged, parentPath})
}

func (t *Tree) setData(a *applier, op *Op) OpResult {
	r := OpResult{Type: OpSetData}
	// The path is validated only when no node has it: every node's path was valid
	// when it was linked (a create, a snapshot's load, the preload), and validating
	// a write's path took longer than finding its node.
	n := t.nodes[op.Path]
	if len(op.Data) > MaxDataSize || n == nil && ValidatePath(op.Path) != nil {
		r.Err = BadArguments
		return r
	}
	if n == nil {
		r.Err = NoNode
		return r
	}
	if !a.allowed(n, PermWrite) {
		r.Err = NoAuth
		return r
	}
	if op.Version != -1 && op.Version != n.st.version {
		r.Err = BadVersion
		return r
	}
	t.touch(op.Path)
	oldData, oldSt := n.data, n.st
	n.data = op.Data
	n.st.version++
	n.st.mzxid, n.st.mtime = a.zxid, a.time
	t.size += int64(len(op.Data) - len(oldData))
	if a.undoing() {
		a.onUndo(func() {
			t.size += int64(len(oldData) - len(n.data))
			n.data, n.st = oldData, oldSt
		})
	}
	a.events = append(a.events, Event{EventNodeDataChanged, op.Path})
	r.Stat = n.stat()
	return r
}

func (t *Tree) check(a *applier, op *Op) OpResult {
	r := OpResult{Type: OpCheck}
	if ValidatePath(op.Path) != nil {
		r.Err = BadArguments
		return r
	}
	n := t.nodes[op.Path]
	switch {
	case n == nil:
		r.Err = NoNode
	case !a.allowed(n, PermRead):
		r.Err = NoAuth
	case op.Version != -1 && op.Version != n.st.version:
		r.Err = BadVersion
	}
	return r
}

// setACL replaces a node's ACL: ADMIN on the node, the ACL's version checked; no
// watch fires (ZooKeeper's setACL changes only aversion).
func (t *Tree) setACL(a *applier, op *Op) OpResult {
	r := OpResult{Type: OpSetACL}
	if ValidatePath(op.Path) != nil {
		r.Err = BadArguments
		return r
	}
	acl, code := fixACL(op.ACL, a.auth)
	n := t.nodes[op.Path]
	switch {
	case code != Ok:
		r.Err = code
	case n == nil:
		r.Err = NoNode
	case !a.allowed(n, PermAdmin):
		r.Err = NoAuth
	case op.Version != -1 && op.Version != n.st.aversion:
		r.Err = BadVersion
	}
	if r.Err != Ok {
		return r
	}
	t.touch(op.Path)
	oldACL, oldSt := n.acl, n.st
	n.acl = acl
	n.st.aversion++
	if a.undoing() {
		a.onUndo(func() { n.acl, n.st = oldACL, oldSt })
	}
	r.Stat = n.stat()
	return r
}

// Ephemerals lists a session's ephemeral nodes, sorted.
func (t *Tree) Ephemerals(session int64) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.sessions[session]
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.ephemerals))
}

// Descendants counts the nodes under path (ZooKeeper's getAllChildrenNumber), or
// NoNode.
func (t *Tree) Descendants(path string) (int, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.nodes[path] == nil {
		return 0, NoNode
	}
	n := 0
	var walk func(p string)
	walk = func(p string) {
		for c := range t.nodes[p].children {
			n++
			walk(joinPath(p, c))
		}
	}
	walk(path)
	return n, nil
}

func joinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// ACL returns a node's ACL and stat, or NoNode.
func (t *Tree) ACL(path string) ([]ACL, Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return nil, Stat{}, NoNode
	}
	return slices.Clone(aclOf(n.acl)), n.stat(), nil
}

// Permit checks that identities auth hold perm on path: NoNode, NoAuth or nil.
func (t *Tree) Permit(path string, auth []ID, perm int32) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	switch {
	case n == nil:
		return NoNode
	case !Allowed(n.acl, auth, perm):
		return NoAuth
	}
	return nil
}

// Get returns a node's data (shared: do not modify) and stat, or NoNode.
func (t *Tree) Get(path string) ([]byte, Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return nil, Stat{}, NoNode
	}
	return n.data, n.stat(), nil
}

// Stat returns a node's stat, or NoNode.
func (t *Tree) Stat(path string) (Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return Stat{}, NoNode
	}
	return n.stat(), nil
}

// Exists reports whether path is a node.
func (t *Tree) Exists(path string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.nodes[path] != nil
}

// Children returns the child names, sorted (ZooKeeper leaves the order
// unspecified; sorted is deterministic), and the node's stat, or NoNode.
func (t *Tree) Children(path string) ([]string, Stat, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return nil, Stat{}, NoNode
	}
	names := make([]string, 0, len(n.children))
	for c := range n.children {
		names = append(names, c)
	}
	slices.Sort(names)
	return names, n.stat(), nil
}

// LastZxid is the zxid of the last applied transaction (or the snapshot's).
func (t *Tree) LastZxid() zab.Zxid {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.lastZxid
}

// NodeCount is the number of znodes, the root included.
func (t *Tree) NodeCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.nodes)
}

// ApproximateSize is the sum of path and data lengths (mntr's zk_approximate_data_size).
func (t *Tree) ApproximateSize() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.size
}

// EphemeralCount is the number of ephemeral nodes (mntr's zk_ephemerals_count).
func (t *Tree) EphemeralCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ephemerals
}

// Session returns a live session's timeout.
func (t *Tree) Session(id int64) (timeout int32, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.sessions[id]
	if !ok {
		return 0, false
	}
	return s.timeout, true
}

// Sessions lists the live sessions by id.
func (t *Tree) Sessions() []SessionInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]SessionInfo, 0, len(t.sessions))
	for _, id := range slices.Sorted(maps.Keys(t.sessions)) {
		s := t.sessions[id]
		out = append(out, SessionInfo{ID: id, Timeout: s.timeout, Ephemerals: slices.Sorted(maps.Keys(s.ephemerals))})
	}
	return out
}

// Clone returns an independent copy (data slices are shared, they are never
// modified in place), e.g. to write a snapshot without blocking Apply.
func (t *Tree) Clone() *Tree {
	t.mu.RLock()
	defer t.mu.RUnlock()
	c := &Tree{
		nodes: make(map[string]*node, len(t.nodes)), sessions: make(map[int64]*session, len(t.sessions)),
		lastZxid: t.lastZxid, size: t.size, ephemerals: t.ephemerals, extended: maps.Clone(t.extended),
	}
	for p, n := range t.nodes {
		m := *n
		m.children = maps.Clone(n.children)
		c.nodes[p] = &m
	}
	for id, s := range t.sessions {
		c.sessions[id] = &session{timeout: s.timeout, ephemerals: maps.Clone(s.ephemerals)}
	}
	return c
}
