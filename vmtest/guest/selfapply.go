package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/topology"
)

// The replicas install their own links: what lets any orchestrator run them (a Swarm
// task, a Kubernetes pod with NET_ADMIN) without the harness reaching into remote
// namespaces. Here each namespace of the lab runs a real poled (this program again,
// as poledMain: poled's own main), as uid 65534 with CAP_NET_ADMIN as its only
// capability, link_mode kernel, and its peers by name (/etc/hosts), so it resolves
// them, probes its own namespace (netem.ProbeHere) and applies its row of the plan to
// its own eth0. The pings between the namespaces must then match the plan as the
// harness's own Apply did, and every eth0 must be bare again once the poleds stop.
// A control: a poled without CAP_NET_ADMIN in auto mode falls back to user space and
// says why.

const (
	poledDir  = "/tmp/poled"
	poledUID  = 65534 // nobody
	adminPort = 8080
)

// poledMain is cmd/poled's main, for the replicas this program starts.
func poledMain(args []string) int {
	cfg, err := replica.ParseFlags("poled", args, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "poled:", err)
		return 2
	}
	ctx, stop := signalContext()
	defer stop()
	n, err := replica.Start(ctx, *cfg, replica.Listeners{}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "poled:", err)
		return 1
	}
	<-n.Done()
	n.Stop() // clears the links it installed
	return 0
}

// selfApplied runs the phase and returns the failed checks.
func selfApplied(ctx context.Context, out io.Writer, l *lab, topo *topology.Topology, plan, applied netem.Plan, s pingSpec, before map[int]string) []string {
	if err := writeReplicaFiles(l, applied); err != nil {
		return []string{"replicas: " + err.Error()}
	}
	var failures []string

	// The control: no CAP_NET_ADMIN, auto mode.
	first := l.nodes[0]
	p, err := startPoled(first, replica.LinksAuto, false)
	if err != nil {
		return []string{"control poled: " + err.Error()}
	}
	st, err := waitLinks(ctx, l, first, func(st replica.LinkStatus) bool { return st.Mode != "" })
	p.stop()
	switch {
	case err != nil:
		failures = append(failures, fmt.Sprintf("control: %v", err))
	case st.Mode != replica.LinksUserSpace || !strings.Contains(st.Reason, "no CAP_NET_ADMIN"):
		failures = append(failures, fmt.Sprintf("control: p%d without CAP_NET_ADMIN reports links %+v; want user-space, no CAP_NET_ADMIN", first.id, st))
	default:
		fmt.Fprintf(out, "== control: poled p%d without CAP_NET_ADMIN (auto): links %s (%s)\n", first.id, st.Mode, st.Reason)
	}

	var procs []*poledProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for _, n := range l.nodes {
		p, err := startPoled(n, replica.LinksKernel, true)
		if err != nil {
			return append(failures, fmt.Sprintf("p%d: %v", n.id, err))
		}
		procs = append(procs, p)
	}
	t0 := time.Now()
	for _, n := range l.nodes {
		st, err := waitLinks(ctx, l, n, func(st replica.LinkStatus) bool { return st.Complete(len(l.nodes)) })
		if err != nil {
			return append(failures, fmt.Sprintf("p%d: %v", n.id, err))
		}
		if st.Mode != replica.LinksKernel || st.Dev != dev {
			failures = append(failures, fmt.Sprintf("p%d: links %+v, want kernel on %s", n.id, st, dev))
		}
	}
	fmt.Fprintf(out, "== %d poleds (uid %d, CAP_NET_ADMIN only, link_mode kernel, peers by name) installed their own links in %v\n",
		len(procs), poledUID, time.Since(t0).Round(time.Millisecond))
	shown, err := netem.Show(ctx, target(l, first))
	if err != nil {
		return append(failures, err.Error())
	}
	fmt.Fprintf(out, "== netem.Show p%d (installed by its poled):\n%s", first.id, shown)

	results, err := measure(ctx, l, s)
	if err != nil {
		return append(failures, err.Error())
	}
	fmt.Fprintln(out, "== with the replicas' own links:")
	failures = append(failures, report(out, topo, plan, results, s)...)

	for _, p := range procs {
		p.stop()
	}
	procs = nil
	for _, n := range l.nodes {
		after, err := n.tcState()
		if err != nil {
			failures = append(failures, fmt.Sprintf("p%d after its poled stopped: %v", n.id, err))
		} else if after != before[n.id] {
			failures = append(failures, fmt.Sprintf("p%d: after its poled stopped %q, before %q", n.id, oneLine(after), oneLine(before[n.id])))
		}
	}
	if len(failures) == 0 {
		fmt.Fprintf(out, "== the poleds stopped (SIGTERM): every %s is back to: %s\n", dev, oneLine(before[first.id]))
	}
	return failures
}

// writeReplicaFiles writes /etc/hosts (pN -> its address), the plan and one config
// per server, and a data directory each, owned by the replicas' user.
func writeReplicaFiles(l *lab, plan netem.Plan) error {
	var hosts strings.Builder
	var peers []replica.Peer
	for _, n := range l.nodes {
		fmt.Fprintf(&hosts, "%s p%d\n", n.addr, n.id)
		peers = append(peers, replica.Peer{ID: n.id, Host: fmt.Sprintf("p%d", n.id), ClientPort: 2181, PeerPort: 2888, ElectionPort: 3888, AdminPort: adminPort})
	}
	if err := os.MkdirAll("/etc", 0o755); err != nil {
		return err
	}
	if err := os.WriteFile("/etc/hosts", []byte(hosts.String()), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(poledDir, 0o755); err != nil {
		return err
	}
	planFile := filepath.Join(poledDir, "plan.json")
	if err := netem.WritePlan(planFile, plan); err != nil {
		return err
	}
	for _, n := range l.nodes {
		data := filepath.Join(poledDir, fmt.Sprintf("p%d", n.id))
		if err := errors.Join(os.MkdirAll(data, 0o755), os.Chown(data, poledUID, poledUID)); err != nil {
			return err
		}
		cfg := replica.Config{ID: n.id, Servers: peers, DataDir: data, LinkPlan: planFile}
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(poledDir, fmt.Sprintf("p%d.json", n.id)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

type poledProc struct {
	id   int
	cmd  *exec.Cmd
	done chan struct{}
}

// startPoled starts this program as n's poled, in n's namespace, as poledUID with
// CAP_NET_ADMIN as its one capability (or none).
func startPoled(n *node, mode string, netAdmin bool) (*poledProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(poledDir, fmt.Sprintf("p%d.log", n.id)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(self, "poled", "--config", filepath.Join(poledDir, fmt.Sprintf("p%d.json", n.id)), "--link-mode", mode)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: poledUID, Gid: poledUID}}
	if netAdmin {
		cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
	}
	if err := inNS(n.ns, cmd.Start); err != nil { // a child inherits its thread's namespace
		return nil, fmt.Errorf("start poled: %w", err)
	}
	p := &poledProc{id: n.id, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

// stop sends SIGTERM (poled then clears its links) and waits; SIGKILL after 10 s.
func (p *poledProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// waitLinks polls n's /status, from n's namespace, until ok accepts its links.
func waitLinks(ctx context.Context, l *lab, n *node, ok func(replica.LinkStatus) bool) (replica.LinkStatus, error) {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := inNS(n.ns, func() error { // the socket stays in n's namespace
				var err error
				c, err = (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}}
	defer hc.CloseIdleConnections()
	url := fmt.Sprintf("http://%s/status", net.JoinHostPort(n.addr.String(), fmt.Sprint(adminPort)))
	deadline := time.Now().Add(60 * time.Second)
	var last error
	var st replica.Status
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := hc.Get(url)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && ok(st.Links) {
				return st.Links, nil
			}
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(poledDir, fmt.Sprintf("p%d.log", n.id)))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return st.Links, fmt.Errorf("links %+v (last error %v); its log ends:\n%s", st.Links, last, strings.Join(lines[max(0, len(lines)-10):], "\n"))
}
