package zkserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"time"
)

// SessionTracker decides when sessions expire. It is a pure structure (no clock,
// no goroutines, not safe for concurrent use): the owner feeds it the sessions it
// learns from applied createSession/closeSession txns, the touches clients make, and
// the time, and submits a closeSession txn for every id Expire returns.
//
// In a standalone server the Standalone backend owns one. In a replicated setup the
// LEADER owns the tracker: followers forward the touches their clients make (Backend.
// Touch) to the leader, and a new leader starts by adding every session of its tree
// (datatree.Tree.Sessions) with a fresh deadline, as ZooKeeper does.
type SessionTracker struct {
	sessions map[int64]*tracked
}

type tracked struct {
	timeout  time.Duration
	deadline time.Time
	expiring bool // Expire returned it; waiting for its closeSession to apply
}

// NewSessionTracker returns an empty tracker.
func NewSessionTracker() *SessionTracker {
	return &SessionTracker{sessions: map[int64]*tracked{}}
}

// Add starts tracking a session (or refreshes one) with its negotiated timeout.
func (t *SessionTracker) Add(id int64, timeout time.Duration, now time.Time) {
	t.sessions[id] = &tracked{timeout: timeout, deadline: now.Add(timeout)}
}

// Touch records a sign of life: the session may live another timeout from now.
// It reports false for an unknown session or one already being expired.
func (t *SessionTracker) Touch(id int64, now time.Time) bool {
	s, ok := t.sessions[id]
	if !ok || s.expiring {
		return false
	}
	if d := now.Add(s.timeout); d.After(s.deadline) {
		s.deadline = d
	}
	return true
}

// Remove stops tracking a session (its closeSession applied).
func (t *SessionTracker) Remove(id int64) { delete(t.sessions, id) }

// Expire returns, sorted, the sessions whose deadline has passed and that were not
// returned before; they stay tracked (and untouchable) until Remove.
func (t *SessionTracker) Expire(now time.Time) []int64 {
	var out []int64
	for id, s := range t.sessions {
		if !s.expiring && !now.Before(s.deadline) {
			s.expiring = true
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Retry makes an expiring session expirable again, for when its closeSession could
// not be submitted (e.g. the leader stepped down before it committed).
func (t *SessionTracker) Retry(id int64) {
	if s, ok := t.sessions[id]; ok {
		s.expiring = false
	}
}

// Len is the number of tracked sessions.
func (t *SessionTracker) Len() int { return len(t.sessions) }

// sessionIDs generates ZooKeeper-shaped session ids: the server id in the top byte,
// then the start time in ms shifted into the next 40 bits, then a counter. Ids from
// different servers, and from restarts of one server, do not collide.
type sessionIDs struct{ next int64 }

func newSessionIDs(serverID int64, now time.Time) *sessionIDs {
	base := int64(uint64(now.UnixMilli()) << 24 >> 8)
	return &sessionIDs{next: base | serverID<<56}
}

func (g *sessionIDs) nextID() int64 {
	g.next++
	return g.next
}

// passwordLen is the length of a session password, as in ZooKeeper.
const passwordLen = 16

// sessionPassword derives a session's password from its id and the secret every
// replica shares, so any server can check a reconnect without replicating passwords
// (ZooKeeper seeds a Random with id ^ superSecret for the same reason).
func sessionPassword(secret []byte, id int64) []byte {
	m := hmac.New(sha256.New, secret)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	m.Write(b[:])
	return m.Sum(nil)[:passwordLen]
}

func checkPassword(secret []byte, id int64, passwd []byte) bool {
	return hmac.Equal(sessionPassword(secret, id), passwd)
}
