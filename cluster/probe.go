package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/trace"
)

var httpClient = &http.Client{Timeout: 3 * time.Second}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// NodeStatus asks a poled's admin endpoint for its state.
func NodeStatus(ctx context.Context, s Server) (replica.Status, error) {
	var st replica.Status
	err := getJSON(ctx, "http://"+s.Admin+"/status", &st)
	return st, err
}

// NodeEvents asks a poled's admin endpoint for its event timeline.
func NodeEvents(ctx context.Context, s Server) ([]event.Event, error) {
	var ev []event.Event
	err := getJSON(ctx, "http://"+s.Admin+"/events", &ev)
	return ev, err
}

// NodeHiccups asks a poled's admin endpoint for its process's hiccup meter; a server
// that runs in another's process (the local backend) has none: ok is false.
func NodeHiccups(ctx context.Context, s Server) (r hiccup.Report, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Admin+"/hiccups", nil)
	if err != nil {
		return r, false, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return r, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return r, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return r, false, fmt.Errorf("GET /hiccups of p%d: %s", s.ID, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, false, fmt.Errorf("GET /hiccups of p%d: %w", s.ID, err)
	}
	return r, true, nil
}

// NodeTrace asks a poled's admin endpoint for its trace's marks from sequence from.
func NodeTrace(ctx context.Context, s Server, from uint64) (trace.Page, error) {
	var p trace.Page
	url := fmt.Sprintf("http://%s/trace?from=%d", s.Admin, from)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return p, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return p, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return p, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	if err := p.UnmarshalBinary(b); err != nil {
		return p, fmt.Errorf("GET %s: %w", url, err)
	}
	return p, nil
}

// Mode asks a server's client port for its mode with the four-letter word srvr,
// which poled and Apache ZooKeeper answer alike: "leader", "follower", "standalone".
func Mode(ctx context.Context, s Server) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", s.Client)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("p%d answered srvr without a Mode line (not serving?)", s.ID)
}

// Prober is a cluster whose servers do not answer srvr (etcd): it tells each one's
// mode itself, "leader" or "follower" once it serves, or why it cannot.
type Prober interface {
	Mode(ctx context.Context, id int) (string, error)
}

// modeFunc is how to ask a server its mode.
type modeFunc func(ctx context.Context, s Server) (string, error)

// modeOf asks cl's own Prober if it has one, else srvr.
func modeOf(cl Cluster) modeFunc {
	if p, ok := cl.(Prober); ok {
		return func(ctx context.Context, s Server) (string, error) { return p.Mode(ctx, s.ID) }
	}
	return Mode
}

// WaitLeader polls the servers until exactly one says it leads and serves, and
// returns its id. alive filters the servers to ask (nil: all).
func WaitLeader(ctx context.Context, servers []Server, alive func(int) bool) (int, error) {
	return waitLeader(ctx, Mode, servers, alive)
}

// WaitLeaderOf is WaitLeader on cl's live servers, asked as cl answers (Prober).
func WaitLeaderOf(ctx context.Context, cl Cluster) (int, error) {
	return waitLeader(ctx, modeOf(cl), cl.Servers(), cl.Alive)
}

func waitLeader(ctx context.Context, mode modeFunc, servers []Server, alive func(int) bool) (int, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		leaders := 0
		id := 0
		for _, s := range servers {
			if alive != nil && !alive(s.ID) {
				continue
			}
			m, err := mode(ctx, s)
			if err != nil {
				last = err
				continue
			}
			if m == "leader" {
				leaders++
				id = s.ID
			}
		}
		if leaders == 1 {
			return id, nil
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return 0, fmt.Errorf("no leader: %w (last error: %v)", ctx.Err(), last)
			}
			return 0, fmt.Errorf("no leader: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// WaitServing polls until every server (that alive accepts; nil: all) answers srvr
// with a mode, i.e. has a leader and is in sync.
func WaitServing(ctx context.Context, servers []Server, alive func(int) bool) error {
	return waitServing(ctx, Mode, servers, alive)
}

// WaitServingOf is WaitServing on servers of cl, asked as cl answers (Prober).
func WaitServingOf(ctx context.Context, cl Cluster, servers []Server, alive func(int) bool) error {
	return waitServing(ctx, modeOf(cl), servers, alive)
}

func waitServing(ctx context.Context, mode modeFunc, servers []Server, alive func(int) bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var last error
		for _, s := range servers {
			if alive != nil && !alive(s.ID) {
				continue
			}
			if _, err := mode(ctx, s); err != nil {
				last = fmt.Errorf("p%d: %w", s.ID, err)
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("servers not serving: %w (%v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// SetDisk slows server s's log syncs (POST /disk; 0 restores them).
func SetDisk(ctx context.Context, s Server, d replica.Disk) error { return post(ctx, s, "disk", d) }

// SetCut cuts (or restores) server s's peer channels to the given peers, through its
// admin port: the replica drops the messages itself, whatever emulates its links.
func SetCut(ctx context.Context, s Server, c replica.Cut) error { return post(ctx, s, "cut", c) }

func post(ctx context.Context, s Server, what string, c any) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	// What is posted is a state (a cut, a disk's delay), so sending it twice is safe;
	// a request on a kept-alive connection the far end had just closed fails with EOF
	// before it was read (net/http retries no POST), and is sent once more.
	for try := 0; ; try++ {
		err = postOnce(ctx, s, what, b)
		if try > 0 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return err
		}
	}
}

func postOnce(ctx context.Context, s Server, what string, b []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.Admin+"/"+what, bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("p%d: %s: %w", s.ID, what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("p%d: %s: %s: %s", s.ID, what, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
