package zkserver

import (
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
)

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
	delete(w.byKey, k)
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
			delete(w.byKey, k)
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
