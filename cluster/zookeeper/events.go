package zookeeper

import (
	"context"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/cluster/internal/logtail"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/zxid"
)

// A ZooKeeper server's timeline, in the event kinds poled records, so that
// election_ms and recovery_ms mean the same on both flavors:
//
//   - STARTED: the harness's marker before each start of the JVM;
//   - LOOKING, ELECTION (with the zxid it proposes: "New election. My id = N,
//     proposed zxid=0x..."), LEADING, FOLLOWING: QuorumPeer's and
//     FastLeaderElection's log lines, stamped by ZooKeeper's logger in ms;
//   - SYNCED: the leader's "Have quorum of supporters ... setting last processed
//     zxid" (a quorum is synced; its epoch), a follower's "Peer state changed:
//     following - broadcast";
//   - FIRST_COMMIT: ZooKeeper logs no commit, so once a server logs LEADING the
//     watcher polls its srvr every logtail.PollInterval until the Zxid line shows a
//     transaction of the leader's new epoch; the event is stamped with the send
//     time of that poll, so it is at most one interval (plus srvr's answer) late.
//     A poll that sees a commit already at its first answer says so in Reason.
//
// The watcher reads the logs every logtail.Interval while the cluster runs.

const (
	logTimeJava = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX" // slf4j-simple's dateTimeFormat
	logTimeGo   = "2006-01-02T15:04:05.000Z07:00"
)

var (
	electionRe = regexp.MustCompile(`New election\. My id = (\d+), proposed zxid=0x([0-9a-fA-F]+)`)
	quorumRe   = regexp.MustCompile(`Have quorum of supporters.*setting last processed zxid: 0x([0-9a-fA-F]+)`)
	zxidRe     = regexp.MustCompile(`(?m)^Zxid: 0x([0-9a-fA-F]+)`)
)

// parseLine turns one log line of server id into an event, if it is one.
func parseLine(id int, line string) (event.Event, bool) {
	if e, ok := logtail.Started(id, line); ok {
		return e, true
	}
	ts, rest, ok := strings.Cut(line, " ")
	if !ok {
		return event.Event{}, false
	}
	t, err := time.Parse(logTimeGo, ts)
	if err != nil {
		return event.Event{}, false
	}
	_, msg, ok := strings.Cut(rest, " - ")
	if !ok {
		return event.Event{}, false
	}
	e := event.Event{TimeNS: t.UnixNano(), Server: id}
	switch {
	case msg == "LOOKING" && strings.Contains(rest, ".QuorumPeer "):
		e.Kind = event.Looking
	case msg == "LEADING" && strings.Contains(rest, ".QuorumPeer "):
		e.Kind, e.Leader = event.Leading, id
	case msg == "FOLLOWING" && strings.Contains(rest, ".QuorumPeer "):
		e.Kind = event.Following
	case msg == "Peer state changed: following - broadcast":
		e.Kind = event.Synced
	default:
		if m := electionRe.FindStringSubmatch(msg); m != nil {
			e.Kind = event.Election
			z, _ := strconv.ParseUint(m[2], 16, 64)
			e.Zxid = zxid.Zxid(z)
		} else if m := quorumRe.FindStringSubmatch(msg); m != nil {
			z, _ := strconv.ParseUint(m[1], 16, 64)
			e.Kind, e.Leader, e.Epoch = event.Synced, id, zxid.Zxid(z).Epoch()
		} else {
			return event.Event{}, false
		}
	}
	return e, true
}

// newWatcher keeps every server's timeline: it tails the logs and, after each
// LEADING, polls the leader for its first commit.
func newWatcher(e *ensemble) *logtail.Tailer {
	return logtail.New(e.ids, e.logFile, func(id int, line string, _ int) (event.Event, func(context.Context), bool) {
		ev, ok := parseLine(id, line)
		if !ok || ev.Kind != event.Leading {
			return ev, nil, ok
		}
		addr := e.addrs[id].client()
		return ev, func(ctx context.Context) {
			logtail.PollFirstCommit(ctx, func(ctx context.Context, sent time.Time, first bool) logtail.Answer {
				return firstCommit(ctx, e.watcher, addr, id, sent, first)
			})
		}, true
	})
}

// firstCommit asks server id's srvr whether a transaction of its new epoch shows.
func firstCommit(ctx context.Context, t *logtail.Tailer, addr string, id int, sent time.Time, first bool) logtail.Answer {
	out, err := fourLetter(ctx, addr, "srvr")
	m := zxidRe.FindStringSubmatch(out)
	switch {
	case err != nil || m == nil:
		return logtail.NoAnswer
	case !strings.Contains(out, "Mode: leader"):
		return logtail.Committed // it lost the leadership before committing anything
	}
	z, _ := strconv.ParseUint(m[1], 16, 64)
	if z&0xffffffff == 0 {
		return logtail.NoCommit
	}
	ev := event.Event{TimeNS: sent.UnixNano(), Server: id, Kind: event.FirstCommit, Epoch: zxid.Zxid(z).Epoch(), Zxid: zxid.Zxid(z), Leader: id}
	if first {
		ev.Reason = "the first srvr answer already showed a commit: an upper bound"
	}
	t.Add(ev)
	return logtail.Committed
}

// fourLetter sends a four-letter word and returns the whole answer.
func fourLetter(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}
