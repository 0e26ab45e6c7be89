package replica

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"

	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/pole"
	"github.com/polebench/polebench/zab"
)

// maxTracePage bounds the marks one GET /trace returns (4.7 MB at 18 bytes a mark):
// the whole of poled's log (trace.DefaultCapacity); the harness reads from a mark on.
const maxTracePage = 1 << 18

// Status is what GET /status returns.
type Status struct {
	ID        int          `json:"id"`
	Role      string       `json:"role"` // LOOKING, FOLLOWING, LEADING
	Serving   bool         `json:"serving"`
	Leader    int          `json:"leader"`
	Epoch     zab.Epoch    `json:"epoch"`
	Election  pole.Epoch   `json:"election_epoch"`
	LastZxid  zab.Zxid     `json:"last_zxid"`
	Committed zab.Zxid     `json:"committed"`
	Peers     []PeerStatus `json:"peers"`
	Links     LinkStatus   `json:"links"`
}

// PeerStatus is the heartbeat monitor's view of a peer: the RTT a run actually saw.
type PeerStatus struct {
	ID      int     `json:"id"`
	Alive   bool    `json:"alive"`
	RTTms   float64 `json:"rtt_ms"`
	Rate    float64 `json:"rate"`
	Samples int     `json:"samples"`
}

// Cut is what POST /cut takes: the peers whose streams to cut (Cut true) or restore,
// on the broadcast channel only or on both (a partition also stops heartbeats and
// elections; an outdated server is cut from the broadcast alone).
type Cut struct {
	Peers         []int `json:"peers"`
	Cut           bool  `json:"cut"`
	BroadcastOnly bool  `json:"broadcast_only,omitempty"`
	// Direction cuts one way only: "out" drops what this server sends to the peers,
	// "in" refuses what they send it; "" cuts both.
	Direction string `json:"direction,omitempty"`
}

// Cut applies c to this node's peer channels: messages to and from the peers are
// dropped, as a network partition drops them.
func (n *Node) Cut(c Cut) {
	for _, p := range c.Peers {
		if c.Direction != "" {
			n.peer.CutOneWay(p, c.Direction == "out", c.Cut)
			if !c.BroadcastOnly {
				n.election.CutOneWay(p, c.Direction == "out", c.Cut)
			}
			continue
		}
		n.peer.Cut(p, c.Cut)
		if !c.BroadcastOnly {
			n.election.Cut(p, c.Cut)
		}
	}
	n.log.Info("links cut", "peers", c.Peers, "cut", c.Cut, "broadcast_only", c.BroadcastOnly, "direction", c.Direction)
}

// MeterHiccups has GET /hiccups serve m's report: the process's hiccup meter, which
// the process runs (poled does; servers in the harness's process share its meter).
func (n *Node) MeterHiccups(m *hiccup.Meter) { n.hiccups.Store(m) }

// Status reports the node's state.
func (n *Node) Status() Status {
	s := n.status.Load()
	st := Status{ID: n.cfg.ID, Role: s.zab.Role.String(), Serving: s.zab.Serving, Leader: int(s.zab.Leader),
		Epoch: s.zab.Epoch, Election: s.epoch, LastZxid: s.zab.LastZxid, Committed: s.zab.Committed,
		Links: n.Links()}
	for _, p := range s.peers {
		st.Peers = append(st.Peers, PeerStatus{ID: p.ID, Alive: p.Alive, RTTms: p.RTT, Rate: p.Rate, Samples: p.Samples})
	}
	return st
}

func (n *Node) adminHandler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, _ *http.Request) { reply(w, n.timeline.Events()) })
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { reply(w, n.Status()) })
	mux.HandleFunc("GET /trace", func(w http.ResponseWriter, r *http.Request) {
		if n.trace == nil {
			http.Error(w, "trace: this server does not record one (poled --trace)", http.StatusNotFound)
			return
		}
		from, err := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64)
		if err != nil {
			http.Error(w, "trace: from: want the sequence number to read from", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(n.trace.Since(from, maxTracePage).AppendBinary(nil))
	})
	mux.HandleFunc("GET /hiccups", func(w http.ResponseWriter, _ *http.Request) {
		m := n.hiccups.Load()
		if m == nil {
			http.Error(w, "hiccups: this server's process runs no hiccup meter (poled runs one; in-process servers share the harness's)", http.StatusNotFound)
			return
		}
		reply(w, m.Report(fmt.Sprintf("p%d", n.cfg.ID)))
	})
	mux.HandleFunc("POST /cut", func(w http.ResponseWriter, r *http.Request) {
		var c Cut
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, "cut: "+err.Error(), http.StatusBadRequest)
			return
		}
		if c.Direction != "" && c.Direction != "in" && c.Direction != "out" {
			http.Error(w, fmt.Sprintf("cut: direction %q: want in, out or none", c.Direction), http.StatusBadRequest)
			return
		}
		for _, p := range c.Peers {
			if p == n.cfg.ID || !slices.ContainsFunc(n.cfg.Servers, func(s Peer) bool { return s.ID == p }) {
				http.Error(w, fmt.Sprintf("cut: p%d is not a peer of p%d", p, n.cfg.ID), http.StatusBadRequest)
				return
			}
		}
		n.Cut(c)
		reply(w, c)
	})
	mux.HandleFunc("POST /disk", n.handleDisk)
	// Go's profiler, to see where a replica's time goes under a run's load.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}
