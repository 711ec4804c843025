package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The balanced soak (-haproxy): the serve processes run behind HAProxy, which health-checks their
// /readyz, and the load goes through it alone. Besides the SIGKILLs, serve processes are restarted
// gracefully (SIGTERM): /readyz turns 503 at once, HAProxy takes the process out within
// checkFall×checkEvery, and the process closes its listener only after drainDelay, by which time
// nothing new reaches it. So a request may fail only if it was in flight on a process killed with
// SIGKILL; any other failure is a violation.
const (
	checkEvery = 250 * time.Millisecond
	checkFall  = 2
	drainDelay = 2 * time.Second
	// killGrace is how long after a SIGKILLed process has exited a request may still fail: the
	// balancer may have handed it one of the dead process's pooled connections just before it saw
	// them closed.
	killGrace = time.Second
)

// haproxyConfig is HAProxy's configuration for the serve processes at addrs, listening on port.
// Requests are retried on another process only when their connection failed (a process that is
// down refuses it): a request a process received may have been acted on, and only the client,
// with its Idempotency-Key, can tell whether to send it again.
func haproxyConfig(port int, addrs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 4096
    log stdout format raw local0 info

defaults
    mode http
    log global
    option httplog
    option dontlog-normal
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    timeout check 2s
    retries 3
    option redispatch 1
    retry-on conn-failure

frontend soak
    bind 127.0.0.1:%d
    default_backend serves

backend serves
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter %dms fastinter %dms downinter %dms fall %d rise 2
`, port, checkEvery.Milliseconds(), checkEvery.Milliseconds(), 2*checkEvery.Milliseconds(), checkFall)
	for i, a := range addrs {
		fmt.Fprintf(&b, "    server serve-%d %s check\n", i, a)
	}
	return b.String()
}

// balance puts HAProxy in front of c's serve processes: the load then goes to entry alone.
func (c *cluster) balance(cfg config, dataDir string) error {
	port, err := cfg.ports.pick()
	if err != nil {
		return err
	}
	var addrs []string
	for _, u := range c.urls {
		addrs = append(addrs, strings.TrimPrefix(u, "http://"))
	}
	file := filepath.Join(dataDir, "haproxy.cfg")
	if err := os.WriteFile(file, []byte(haproxyConfig(port, addrs)), 0o644); err != nil {
		return err
	}
	c.entry = []string{"http://127.0.0.1:" + strconv.Itoa(port)}
	// Ready once it routes to a process that passed its checks.
	c.haproxy = &proc{name: "haproxy", path: cfg.haproxy, args: []string{"-db", "-f", file}, env: cfg.env.list(),
		log: filepath.Join(cfg.dir, "haproxy.log"), ready: httpReady(c.entry[0] + "/readyz")}
	return nil
}

// ensureBalancer starts HAProxy, if the soak runs one and it is not running.
func (c *cluster) ensureBalancer(ctx context.Context, tries int) error {
	if c.haproxy == nil || c.haproxy.running() {
		return nil
	}
	_, err := c.haproxy.start(ctx, tries)
	return err
}

// extraEnv is what the serve processes and commands get beyond pastebinEnv: the pooler, when the
// soak goes through it, with migrations over the direct URL; and, behind the balancer, the drain
// delay that lets HAProxy take a process out before it stops listening.
func (cfg config) extraEnv(dbURL string) ([]string, error) {
	var env []string
	if cfg.poolerURL != "" {
		pooled, err := throughPooler(dbURL, cfg.poolerURL)
		if err != nil {
			return nil, err
		}
		env = append(env, "PASTEBIN_DATABASE_URL="+pooled, "PASTEBIN_DATABASE_POOLER=transaction",
			"PASTEBIN_MIGRATE_DATABASE_URL="+dbURL)
	}
	if cfg.haproxy != "" {
		env = append(env, "PASTEBIN_DRAIN_DELAY="+drainDelay.String(), "PASTEBIN_SHUTDOWN_TIMEOUT=20s")
	}
	return env, nil
}

// throughPooler is dbURL's database at the pooler's address, with dbURL's settings.
func throughPooler(dbURL, poolerURL string) (string, error) {
	d, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	p, err := url.Parse(poolerURL)
	if err != nil {
		return "", err
	}
	d.Host = p.Host
	return d.String(), nil
}

// window is a stretch of time, and what happened in it.
type window struct {
	from, to time.Time // a zero to: still going on
	what     string
}

func (w window) overlaps(from, to time.Time) bool {
	return !to.Before(w.from) && (w.to.IsZero() || !from.After(w.to))
}

// timeline records the serve kills, and the requests that failed, for judging the second by the first.
type timeline struct {
	mu       sync.Mutex
	kills    []window
	failures []window
}

func (t *timeline) add(list *[]window, w window) {
	t.mu.Lock()
	*list = append(*list, w)
	t.mu.Unlock()
}

// kill SIGKILLs p, recording the kill from before the signal until killGrace after the exit.
func (t *timeline) kill(p *proc) {
	t.mu.Lock()
	i := len(t.kills)
	t.kills = append(t.kills, window{from: time.Now(), what: p.name})
	t.mu.Unlock()
	p.stop(syscall.SIGKILL)
	t.mu.Lock()
	t.kills[i].to = time.Now().Add(killGrace)
	t.mu.Unlock()
}

// duringKill reports whether a request sent at from and answered at to was in flight while a
// process was killed. Such a request may have been acted on by the dead process and then sent
// again by the balancer, which cannot tell a request the process received from one it never read
// on a connection that broke: a create is then answered again (its Idempotency-Key), a delete
// again (a tombstone answers 204), and a burn read answers 410, the paste burned by the first.
func (t *timeline) duringKill(from, to time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range t.kills {
		if k.overlaps(from, to) {
			return true
		}
	}
	return false
}

// unexplained returns the failed requests that no SIGKILL explains: they were sent after the
// process had exited (and killGrace), or answered before it was killed.
func (t *timeline) unexplained() []window {
	var out []window
	for _, f := range t.failureList() {
		if !t.duringKill(f.from, f.to) {
			out = append(out, f)
		}
	}
	return out
}

func (t *timeline) failureList() []window {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]window(nil), t.failures...)
}

// gracefulStop bounds a SIGTERM restart: drainDelay, then requests in flight and the cleanup
// batches claimed finish. A process still running after it is killed, which counts as a kill.
const gracefulStop = 40 * time.Second

// terminate stops p with SIGTERM and waits for it to exit; it reports whether it did so by itself.
func (t *timeline) terminate(p *proc) bool {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return true
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return true
	case <-time.After(gracefulStop):
	}
	t.kill(p)
	return false
}
