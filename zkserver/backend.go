// Package zkserver is poled's ZooKeeper client port: a TCP front-end that speaks
// the client wire protocol (package zkproto) and runs clients' requests against a
// Backend, the replica underneath. It answers four-letter words, opens, resumes
// and closes sessions, pipelines each session's requests with replies in order,
// and keeps the watches of the clients connected to it.
//
// A Backend applies transactions (package datatree) and serves local reads. The
// Standalone backend in this package is a single node; the replicated backend
// orders writes through the broadcast and implements the same interface.
package zkserver

import (
	"github.com/polebench/polebench/datatree"
)

// Backend is the replica under the front-end.
//
// Wiring: srv, _ := zkserver.New(cfg, backend); the backend calls srv.Applied for
// every txn it applies; go srv.Serve(ctx, listener); the replica calls
// srv.CloseConnections when it stops serving (election, resync).
//
// Contract with the Server: the backend calls Server.Applied for EVERY transaction
// it applies (client writes from any server, session creates and closes, expiries),
// in zxid order, while holding the lock that Read takes, and only after that
// resolves the Submit channel of that transaction. That is what makes a watch event
// reach its client before any reply that shows the change, and what lets a read
// register a watch atomically with what it read.
type Backend interface {
	// Submit queues txn (Session is set, Time is the backend's to fix) to be ordered
	// and applied, and returns without waiting for the commit. The front-end never
	// calls Submit concurrently for one session, and the txns of one session must be
	// applied in the order of its Submit calls (a follower forwarding them over one
	// ordered connection to the leader does that). The channel must be buffered so
	// the backend never blocks on it; it yields exactly one Outcome: the result once
	// the txn is applied on this replica (after Applied returned for it), or an error
	// when this replica will not learn the outcome (no leader, shutting down). The
	// txn may still commit: the front-end drops the connection so that the client
	// sees a connection loss, as with ZooKeeper.
	Submit(txn datatree.Txn) <-chan Outcome

	// Sync yields once this replica has applied every transaction the leader had
	// committed when Sync was called (ZooKeeper's sync), or an error.
	Sync() <-chan error

	// Read runs fn on the local tree, excluding Apply and Applied for its duration.
	// fn must not block.
	Read(fn func(t *datatree.Tree))

	// Touch reports that session id's client showed a sign of life on this server.
	// The session's expiry owner (the leader, or the standalone node) must treat it
	// as a touch within a tick or so. It must not block.
	Touch(id int64)

	// Status is the replica's state for the four-letter words and for admitting
	// clients: while Serving is false new connections are refused.
	Status() BackendStatus
}

// Outcome is the result of a submitted transaction.
type Outcome struct {
	Result datatree.Result
	Err    error
}

// BackendStatus is what the replica reports about itself.
type BackendStatus struct {
	Serving bool   // has a leader and is in sync: may serve clients
	Mode    string // zkproto.ModeLeader, ModeFollower or ModeStandalone
	// Leader only (mntr).
	Followers       int64
	SyncedFollowers int64
	PendingSyncs    int64
}
