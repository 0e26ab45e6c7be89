package swarm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// The swarm backend needs each node's own engine: to load the poled image into it
// (no registry), to kill a task's container at once, and to remove the run's volumes,
// which live on the nodes. An engine is found by asking it which swarm node it is
// (Info().Swarm.NodeID), wherever its address came from: the manager the harness talks
// to (DOCKER_HOST), Config.Engines (POLEBENCH_SWARM_ENGINES), or the Docker CLI's
// contexts (`docker context create NODE --docker host=tcp://ADDR:2376`, with TLS).

// engineTimeout bounds the question to one engine: a context for a machine that
// is down must not stall the run.
const engineTimeout = 5 * time.Second

// nodeEngines maps node IDs to their engines' clients.
type nodeEngines map[string]*client.Client

func (e nodeEngines) close(except *client.Client) {
	for _, c := range e {
		if c != except {
			c.Close()
		}
	}
}

// connectEngines finds the engines of the swarm's nodes: the manager's own (cli,
// node self) and every address in hosts or a Docker context whose engine is a node of
// this swarm. Addresses that do not answer, or answer for another swarm, are logged
// and skipped.
func connectEngines(ctx context.Context, cli *client.Client, self, cluster string, hosts []string, log *slog.Logger) nodeEngines {
	engines := nodeEngines{self: cli}
	type cand struct {
		from string
		opts []client.Opt
	}
	var cands []cand
	for _, h := range hosts {
		cands = append(cands, cand{"engine " + h, []client.Opt{client.WithHost(h)}})
	}
	ctxs, err := dockerContexts()
	if err != nil {
		log.Warn("docker contexts unreadable", "err", err)
	}
	for _, c := range ctxs {
		cands = append(cands, cand{"context " + c.name + " (" + c.host + ")", c.opts})
	}
	for _, c := range cands {
		ec, err := client.NewClientWithOpts(append(c.opts, client.WithAPIVersionNegotiation())...)
		if err != nil {
			log.Warn("swarm engine skipped", "from", c.from, "err", err)
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, engineTimeout)
		info, err := ec.Info(ictx)
		cancel()
		switch {
		case err != nil:
			log.Warn("swarm engine skipped: no answer", "from", c.from, "err", err)
		case info.Swarm.NodeID == "":
			log.Debug("swarm engine skipped: not in a swarm", "from", c.from)
		case info.Swarm.Cluster != nil && info.Swarm.Cluster.ID != cluster: // only managers say
			log.Debug("swarm engine skipped: another swarm", "from", c.from)
		case engines[info.Swarm.NodeID] != nil:
		default:
			engines[info.Swarm.NodeID] = ec
			log.Debug("swarm engine", "node", info.Swarm.NodeID, "from", c.from)
			continue
		}
		ec.Close()
	}
	return engines
}

// dockerContext is one Docker CLI context with a Docker endpoint.
type dockerContext struct {
	name, host string
	opts       []client.Opt
}

// dockerContexts reads the Docker CLI's context store ($DOCKER_CONFIG, else
// ~/.docker): contexts/meta/<digest>/meta.json names each context and its Docker
// endpoint, contexts/tls/<digest>/docker/ holds its TLS files. ssh:// endpoints need the
// CLI's connection helper and are skipped.
func dockerContexts() ([]dockerContext, error) {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil
		}
		dir = filepath.Join(home, ".docker")
	}
	metas, err := filepath.Glob(filepath.Join(dir, "contexts", "meta", "*", "meta.json"))
	if err != nil {
		return nil, err
	}
	var out []dockerContext
	var errs []error
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var meta struct {
			Name      string
			Endpoints map[string]struct {
				Host          string
				SkipTLSVerify bool
			}
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			continue
		}
		ep, ok := meta.Endpoints["docker"]
		if !ok || ep.Host == "" || strings.HasPrefix(ep.Host, "ssh://") {
			continue
		}
		c := dockerContext{name: meta.Name, host: ep.Host, opts: []client.Opt{client.WithHost(ep.Host)}}
		tls := filepath.Join(dir, "contexts", "tls", filepath.Base(filepath.Dir(m)), "docker")
		if _, err := os.Stat(filepath.Join(tls, "key.pem")); err == nil {
			c.opts = append(c.opts, client.WithTLSClientConfig(filepath.Join(tls, "ca.pem"), filepath.Join(tls, "cert.pem"), filepath.Join(tls, "key.pem")))
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b dockerContext) int { return strings.Compare(a.name, b.name) })
	return out, errors.Join(errs...)
}

// loadImage copies the image ref (its ID) from the engine src into dst unless dst
// has it already: docker save into docker load, the way to run on nodes without a
// registry. The ID is the same on both sides, so services name the image by ID and no
// node ever tries to pull it.
func loadImage(ctx context.Context, src, dst *client.Client, ref, id string) (loaded bool, err error) {
	if _, err := dst.ImageInspect(ctx, id); err == nil {
		return false, nil
	} else if !client.IsErrNotFound(err) {
		return false, err
	}
	rc, err := src.ImageSave(ctx, []string{ref})
	if err != nil {
		return false, fmt.Errorf("save %s: %w", ref, err)
	}
	defer rc.Close()
	resp, err := dst.ImageLoad(ctx, rc, client.ImageLoadWithQuiet(true))
	if err != nil {
		return false, fmt.Errorf("load %s: %w", ref, err)
	}
	err = readJSONStream(resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, fmt.Errorf("load %s: %w", ref, err)
	}
	if _, err := dst.ImageInspect(ctx, id); err != nil {
		return false, fmt.Errorf("load %s: the image is not there after loading: %w", ref, err)
	}
	return true, nil
}

// pushImage tags ref as registry/<repo:tag> and pushes it there (a registry
// without authentication, or one the engine is logged in to), for nodes to pull.
func pushImage(ctx context.Context, cli *client.Client, ref, registry string) (string, error) {
	dst := strings.TrimSuffix(registry, "/") + "/" + ref
	if err := cli.ImageTag(ctx, ref, dst); err != nil {
		return "", fmt.Errorf("tag %s as %s: %w", ref, dst, err)
	}
	rc, err := cli.ImagePush(ctx, dst, image.PushOptions{RegistryAuth: base64.URLEncoding.EncodeToString([]byte("{}"))})
	if err != nil {
		return "", fmt.Errorf("push %s: %w", dst, err)
	}
	defer rc.Close()
	if err := readJSONStream(rc); err != nil {
		return "", fmt.Errorf("push %s: %w", dst, err)
	}
	return dst, nil
}

// readJSONStream reads an engine's progress stream to its end and returns the first
// error it reports.
func readJSONStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string
			ErrorDetail *struct{ Message string }
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}
