package zkserver

import (
	"strings"
	"sync"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zkproto"
)

// watchKind is ZooKeeper's server-side split: exists and getData set data
// watches, getChildren sets child watches.
type watchKind uint8

const (
	dataWatch watchKind = iota
	childWatch
	// addWatch's watches are never disarmed by an event. As in ZooKeeper, each is
	// armed in both the data and the child halves (removeWatches of one type removes
	// one half): PERSISTENT gets its path's events, PERSISTENT_RECURSIVE its path's
	// and its descendants' but child events.
	persistentData
	persistentChild
	recursiveData
	recursiveChild
)

// persistentKinds are the halves of a persistent watch.
func (k watchKind) persistent() bool { return k >= persistentData }

type watchKey struct {
	kind watchKind
	path string
}

// watches holds the one-shot watches of this server's connections. A connection
// watches a (kind, path) at most once, however many reads set it, and gets one
// event per trigger, as with ZooKeeper.
type watches struct {
	mu     sync.Mutex
	byKey  map[watchKey]map[*conn]struct{}
	byConn map[*conn]map[watchKey]struct{}
	// persistent counts the keys of the persistent kinds: none, and firing looks up
	// nothing more than before they existed.
	persistent int
}

func newWatches() *watches {
	return &watches{byKey: map[watchKey]map[*conn]struct{}{}, byConn: map[*conn]map[watchKey]struct{}{}}
}

func (w *watches) add(c *conn, kind watchKind, path string) {
	k := watchKey{kind, path}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byKey[k] == nil {
		w.byKey[k] = map[*conn]struct{}{}
		if kind.persistent() {
			w.persistent++
		}
	}
	w.byKey[k][c] = struct{}{}
	if w.byConn[c] == nil {
		w.byConn[c] = map[watchKey]struct{}{}
	}
	w.byConn[c][k] = struct{}{}
}

// take removes and returns the connections watching k.
func (w *watches) take(k watchKey, into map[*conn]struct{}) {
	for c := range w.byKey[k] {
		into[c] = struct{}{}
		delete(w.byConn[c], k)
		if len(w.byConn[c]) == 0 {
			delete(w.byConn, c)
		}
	}
	w.dropKey(k)
}

func (w *watches) dropKey(k watchKey) {
	if _, ok := w.byKey[k]; ok && k.kind.persistent() {
		w.persistent--
	}
	delete(w.byKey, k)
}

// peek adds the connections watching k, leaving the watches armed.
func (w *watches) peek(k watchKey, into map[*conn]struct{}) {
	for c := range w.byKey[k] {
		into[c] = struct{}{}
	}
}

// remove disarms c's watch k; it reports whether there was one.
func (w *watches) remove(c *conn, k watchKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.byKey[k][c]; !ok {
		return false
	}
	delete(w.byKey[k], c)
	if len(w.byKey[k]) == 0 {
		w.dropKey(k)
	}
	delete(w.byConn[c], k)
	if len(w.byConn[c]) == 0 {
		delete(w.byConn, c)
	}
	return true
}

// has reports whether c has watch k armed.
func (w *watches) has(c *conn, k watchKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.byKey[k][c]
	return ok
}

// fire sends ev to every connection watching it and disarms those watches.
func (w *watches) fire(ev datatree.Event) {
	hit := map[*conn]struct{}{}
	w.mu.Lock()
	switch ev.Type {
	case datatree.EventNodeCreated, datatree.EventNodeDataChanged:
		w.take(watchKey{dataWatch, ev.Path}, hit)
	case datatree.EventNodeDeleted:
		w.take(watchKey{dataWatch, ev.Path}, hit)
		w.take(watchKey{childWatch, ev.Path}, hit)
	case datatree.EventNodeChildrenChanged:
		w.take(watchKey{childWatch, ev.Path}, hit)
	}
	if w.persistent > 0 {
		w.firePersistent(ev, hit)
	}
	w.mu.Unlock()
	if len(hit) == 0 {
		return
	}
	frame := zkproto.AppendEvent(nil, zkproto.EventType(ev.Type), ev.Path)
	for c := range hit {
		c.send(frame)
	}
}

// removeConn drops every watch of a closed connection.
func (w *watches) removeConn(c *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.byConn[c] {
		delete(w.byKey[k], c)
		if len(w.byKey[k]) == 0 {
			w.dropKey(k)
		}
	}
	delete(w.byConn, c)
}

// count is the number of armed (connection, kind, path) watches.
func (w *watches) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ks := range w.byConn {
		n += len(ks)
	}
	return int64(n)
}

// firePersistent adds the connections whose persistent watches ev triggers: the
// data halves on a node's creation, change and deletion, the child halves on its
// children's change and its deletion; a recursive watch's data half on its
// descendants' too, never on child events.
func (w *watches) firePersistent(ev datatree.Event, hit map[*conn]struct{}) {
	data := ev.Type != datatree.EventNodeChildrenChanged
	child := ev.Type == datatree.EventNodeChildrenChanged || ev.Type == datatree.EventNodeDeleted
	if data {
		w.peek(watchKey{persistentData, ev.Path}, hit)
		for p := ev.Path; ; p = parentPath(p) {
			w.peek(watchKey{recursiveData, p}, hit)
			if p == "/" {
				break
			}
		}
	}
	if child {
		w.peek(watchKey{persistentChild, ev.Path}, hit)
		if ev.Type == datatree.EventNodeDeleted {
			w.peek(watchKey{recursiveChild, ev.Path}, hit)
		}
	}
}

func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
