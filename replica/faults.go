package replica

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Pause freezes the node's loop as SIGSTOP freezes a process: from its next turn it
// steps nothing, sends nothing and no timer fires, while its sockets stay open and
// what peers and clients send waits in them. It is the local backend's pause, where
// the servers share the harness's process. It reports false if it was paused already.
func (n *Node) Pause() bool {
	n.pauseMu.Lock()
	defer n.pauseMu.Unlock()
	if n.paused || n.ctx.Err() != nil {
		return false
	}
	n.loopMu.Lock()
	n.paused = true
	return true
}

// Resume lets a paused node's loop run again; false if it was not paused.
func (n *Node) Resume() bool {
	n.pauseMu.Lock()
	defer n.pauseMu.Unlock()
	if !n.paused {
		return false
	}
	n.paused = false
	n.loopMu.Unlock()
	return true
}

// SyncDelayer is a log whose syncs can be slowed (storage.FileLog).
type SyncDelayer interface{ SetSyncDelay(time.Duration) }

// SetDiskDelay makes every sync of the node's log take d longer (a slow disk; 0
// restores it). It is POST /disk on the admin port.
func (n *Node) SetDiskDelay(d time.Duration) error {
	if n.store == nil {
		return fmt.Errorf("p%d: no store", n.cfg.ID)
	}
	l, ok := n.store.Log.(SyncDelayer)
	if !ok {
		return fmt.Errorf("p%d: its log cannot be slowed", n.cfg.ID)
	}
	l.SetSyncDelay(d)
	n.log.Info("disk delay", "sync_delay", d)
	return nil
}

// Disk is what POST /disk takes.
type Disk struct {
	SyncDelay Duration `json:"sync_delay"`
}

func (n *Node) handleDisk(w http.ResponseWriter, r *http.Request) {
	var d Disk
	if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
		http.Error(w, "disk: "+err.Error(), http.StatusBadRequest)
		return
	}
	if d.SyncDelay < 0 {
		http.Error(w, "disk: a negative delay", http.StatusBadRequest)
		return
	}
	if err := n.SetDiskDelay(time.Duration(d.SyncDelay)); err != nil {
		http.Error(w, "disk: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(d)
}
