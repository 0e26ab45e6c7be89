package zookeeper

import (
	"fmt"
	"net"
	"strconv"

	"github.com/polebench/polebench/cluster/internal/proxyset"
	"github.com/polebench/polebench/netem"
)

// proxies are ZooKeeper's user-space links: a netem.Proxy per ordered server pair and
// port (quorum and election), each direction on the plan's DelayLine for that
// direction. Server i's zoo.cfg names server j by i's proxies to j, so everything i
// sends j, and j's answers on the same connection, cross the emulated link.
type proxies struct {
	set   proxyset.Set
	proxy map[link]*netem.Proxy
}

// link is the proxy through which server From reaches server To's Port.
type link struct {
	From, To int
	Port     string // "quorum" or "election"
}

// newProxies starts the proxies on host (an address every server can reach, and from
// which every server is reachable) and points e's zoo.cfg names at them.
func newProxies(e *ensemble, plan netem.Plan, host string) (_ *proxies, err error) {
	l := &proxies{proxy: map[link]*netem.Proxy{}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	ids := e.ids()
	lns := map[link]net.Listener{}
	defer func() {
		for k, ln := range lns {
			if l.proxy[k] == nil {
				ln.Close()
			}
		}
	}()
	for _, i := range ids {
		for _, j := range ids {
			if i == j {
				continue
			}
			for _, port := range []string{"quorum", "election"} {
				ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
				if err != nil {
					return nil, fmt.Errorf("zookeeper: proxy listener: %w", err)
				}
				lns[link{i, j, port}] = ln
			}
		}
	}
	for k, ln := range lns {
		to := e.addrs[k.To]
		port := to.Quorum
		cfg := netem.ProxyConfig{
			Out:    func() (*netem.DelayLine, error) { return plan.DelayLine(k.From, k.To) },
			Back:   func() (*netem.DelayLine, error) { return plan.DelayLine(k.To, k.From) },
			Logger: e.log.With("link", fmt.Sprintf("p%d->p%d %s", k.From, k.To, k.Port)),
		}
		if k.Port == "election" {
			port = to.Election
			cfg.Rewrite = electionRewrite(lns[link{k.To, k.From, "election"}].Addr().String())
		}
		cfg.Target = net.JoinHostPort(to.Host, strconv.Itoa(port))
		l.proxy[k] = netem.NewProxy(ln, cfg)
		l.set.Add(k.From, k.To, l.proxy[k])
	}
	for _, i := range ids {
		for _, j := range ids {
			if i == j {
				continue
			}
			e.names[i][j] = hostPorts{Host: host, Client: e.addrs[j].Client,
				Quorum: portOf(l.proxy[link{i, j, "quorum"}].Addr()), Election: portOf(l.proxy[link{i, j, "election"}].Addr())}
		}
	}
	return l, nil
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

func (l *proxies) close() { l.set.Close() }
