// Package etcdsys is the placement controller's view of an unmodified etcd cluster,
// through etcd's own API only: Status (leader, term, raft index) and MemberList from
// each member's client URL, the round trips etcd's peers measure between themselves
// (the rafthttp prober's etcd_network_peer_round_trip_time_seconds on /metrics), and
// MoveLeader (a Raft leadership transfer) sent to the leader.
package etcdsys

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/polebench/polebench/placement"
)

// System is an etcd cluster whose members are named p<id> (as polebench names them).
type System struct {
	ids     []int
	urls    map[int]string // client URL by id
	clients map[int]*clientv3.Client
	http    *http.Client
	timeout time.Duration

	mu     sync.Mutex
	etcdID map[int]uint64
	byEtcd map[uint64]int
	rtt    map[[2]int]float64 // ms, as the first member's prober measured the second
}

// New connects to members (id to client URL, e.g. http://127.0.0.1:2379).
func New(members map[int]string) (*System, error) {
	s := &System{urls: members, clients: map[int]*clientv3.Client{}, http: &http.Client{Timeout: time.Second},
		timeout: 500 * time.Millisecond, etcdID: map[int]uint64{}, byEtcd: map[uint64]int{}, rtt: map[[2]int]float64{}}
	for id, u := range members {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{u}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("etcd client of p%d (%s): %w", id, u, err)
		}
		s.clients[id], s.ids = cli, append(s.ids, id)
	}
	return s, nil
}

// Close closes the clients.
func (s *System) Close() error {
	var errs []error
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Observe asks every member for its status and its peers' round trips.
func (s *System) Observe(ctx context.Context) (placement.View, error) {
	if err := s.learnIDs(ctx); err != nil {
		return placement.View{}, err
	}
	var v placement.View
	var term uint64
	for _, id := range s.ids {
		m := placement.Member{ID: id}
		sctx, cancel := context.WithTimeout(ctx, s.timeout)
		st, err := s.clients[id].Status(sctx, s.urls[id])
		cancel()
		if err == nil {
			m.Up, m.Index = true, st.RaftIndex
			if l, ok := s.id(st.Leader); ok && st.RaftTerm >= term {
				v.Leader, term = l, st.RaftTerm
			}
			s.scrape(ctx, id)
		}
		v.Members = append(v.Members, m)
	}
	v.RTT = s.roundTrip()
	return v, nil
}

// Move has from, the leader, hand its leadership to to.
func (s *System) Move(ctx context.Context, from, to int) error {
	target, ok := s.etcd(to)
	if !ok {
		return fmt.Errorf("p%d's etcd id is not known", to)
	}
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.clients[from].MoveLeader(mctx, target); err != nil {
		return fmt.Errorf("move leader p%d to p%d: %w", from, to, err)
	}
	return nil
}

// learnIDs maps member names p<id> to etcd's member ids, once.
func (s *System) learnIDs(ctx context.Context) error {
	s.mu.Lock()
	known := len(s.etcdID) == len(s.ids)
	s.mu.Unlock()
	if known {
		return nil
	}
	var last error
	for _, id := range s.ids {
		lctx, cancel := context.WithTimeout(ctx, s.timeout)
		resp, err := s.clients[id].MemberList(lctx)
		cancel()
		if err != nil {
			last = err
			continue
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range resp.Members {
			n, err := strconv.Atoi(strings.TrimPrefix(m.Name, "p"))
			if err == nil && s.urls[n] != "" {
				s.etcdID[n], s.byEtcd[m.ID] = m.ID, n
			}
		}
		if len(s.etcdID) < len(s.ids) {
			return fmt.Errorf("etcd's members are not named p1..p%d as the topology's servers", len(s.ids))
		}
		return nil
	}
	return fmt.Errorf("member list: no member answered: %w", last)
}

func (s *System) id(etcdID uint64) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byEtcd[etcdID]
	return id, ok
}

func (s *System) etcd(id int) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.etcdID[id]
	return e, ok
}

// scrape reads member id's measured round trips to its peers off its /metrics: the
// mean of what its prober observed (the histogram's sum over its count).
func (s *System) scrape(ctx context.Context, id int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.urls[id]+"/metrics", nil)
	if err != nil {
		return
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sum, count := map[uint64]float64{}, map[uint64]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		to, part, v, ok := rttLine(sc.Text())
		if !ok {
			continue
		}
		if part == "sum" {
			sum[to] = v
		} else {
			count[to] = v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for to, n := range count {
		if peer, ok := s.byEtcd[to]; ok && n > 0 {
			s.rtt[[2]int{id, peer}] = sum[to] / n * 1000
		}
	}
}

const rttMetric = "etcd_network_peer_round_trip_time_seconds_"

// rttLine parses a line such as
// etcd_network_peer_round_trip_time_seconds_sum{To="8e9e05c52164694d"} 0.0012.
func rttLine(line string) (to uint64, part string, v float64, ok bool) {
	rest, found := strings.CutPrefix(line, rttMetric)
	if !found {
		return 0, "", 0, false
	}
	part, rest, found = strings.Cut(rest, `{To="`)
	if !found || part != "sum" && part != "count" {
		return 0, "", 0, false
	}
	hex, rest, found := strings.Cut(rest, `"} `)
	if !found {
		return 0, "", 0, false
	}
	to, err1 := strconv.ParseUint(hex, 16, 64)
	v, err2 := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	return to, part, v, err1 == nil && err2 == nil
}

// roundTrip is the measured round trips as a snapshot: a pair's is the mean of the two
// ends' measurements, or the one end's that has one.
func (s *System) roundTrip() func(a, b int) (float64, bool) {
	s.mu.Lock()
	m := make(map[[2]int]float64, len(s.rtt))
	for k, v := range s.rtt {
		m[k] = v
	}
	s.mu.Unlock()
	return func(a, b int) (float64, bool) {
		x, okx := m[[2]int{a, b}]
		y, oky := m[[2]int{b, a}]
		switch {
		case okx && oky:
			return (x + y) / 2, true
		case okx:
			return x, true
		case oky:
			return y, true
		}
		return 0, false
	}
}
