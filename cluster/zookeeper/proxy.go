package zookeeper

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/polebench/polebench/netem"
)

// proxies are ZooKeeper's user-space links: a netem.Proxy per ordered server pair and
// port (quorum and election), each direction on the plan's DelayLine for that
// direction. Server i's zoo.cfg names server j by i's proxies to j, so everything i
// sends j, and j's answers on the same connection, cross the emulated link.
type proxies struct {
	proxies map[link]*netem.Proxy
}

// link is the proxy through which server From reaches server To's Port.
type link struct {
	From, To int
	Port     string // "quorum" or "election"
}

// newProxies starts the proxies on host (an address every server can reach, and from
// which every server is reachable) and points e's zoo.cfg names at them.
func newProxies(e *ensemble, plan netem.Plan, host string) (_ *proxies, err error) {
	l := &proxies{proxies: map[link]*netem.Proxy{}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	ids := e.ids()
	lns := map[link]net.Listener{}
	defer func() {
		for k, ln := range lns {
			if l.proxies[k] == nil {
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
		l.proxies[k] = netem.NewProxy(ln, cfg)
	}
	for _, i := range ids {
		for _, j := range ids {
			if i == j {
				continue
			}
			e.names[i][j] = hostPorts{Host: host, Client: e.addrs[j].Client,
				Quorum: portOf(l.proxies[link{i, j, "quorum"}].Addr()), Election: portOf(l.proxies[link{i, j, "election"}].Addr())}
		}
	}
	return l, nil
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// rtts are the RTTs the proxies measured between every two servers, in ms: the mean
// realized one-way delay of heartbeat-sized chunks (netem.SmallChunk bytes at most:
// pings, acks, election notifications) each way, summed. Pairs without traffic both
// ways are left out.
func (l *proxies) rtts(ids []int) map[string]any {
	type dir struct {
		sum time.Duration
		n   int64
	}
	oneWay := map[[2]int]*dir{}
	add := func(from, to int, mean time.Duration, n int64) {
		d := oneWay[[2]int{from, to}]
		if d == nil {
			d = &dir{}
			oneWay[[2]int{from, to}] = d
		}
		d.sum += mean * time.Duration(n)
		d.n += n
	}
	for k, p := range l.proxies {
		out, back, nOut, nBack := p.Measured()
		add(k.From, k.To, out, nOut)
		add(k.To, k.From, back, nBack)
	}
	res := map[string]any{}
	for _, i := range ids {
		peers := map[string]float64{}
		for _, j := range ids {
			a, b := oneWay[[2]int{i, j}], oneWay[[2]int{j, i}]
			if i == j || a == nil || b == nil || a.n == 0 || b.n == 0 {
				continue
			}
			rtt := a.sum/time.Duration(a.n) + b.sum/time.Duration(b.n)
			peers[fmt.Sprintf("p%d", j)] = float64(rtt) / float64(time.Millisecond)
		}
		res[fmt.Sprintf("p%d", i)] = peers
	}
	return res
}

func (l *proxies) close() {
	keys := make([]link, 0, len(l.proxies))
	for k := range l.proxies {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b link) int { return a.From*100 + a.To - b.From*100 - b.To })
	for _, k := range keys {
		l.proxies[k].Close()
	}
}
