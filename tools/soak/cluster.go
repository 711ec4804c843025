package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// The S3 server's credentials and the bucket. The server is the soak's own, on loopback.
const (
	s3Key    = "soak-access-key"
	s3Secret = "soak-secret-key"
	s3Bucket = "soak"
)

// cluster is every process the soak runs: the serve processes, Redis (one server or a Redis Cluster)
// and the S3 server. PostgreSQL is the shared test server, which the soak never stops.
type cluster struct {
	serves     []*proc
	urls       []string // base URL of each serve process, index for index
	redis      *redisServers
	s3         *proc
	env        []string // environment of every pastebin command: where its services are
	bin        string
	adminToken string
	haproxy    *proc    // the balancer in front of the serve processes, if the soak runs one
	entry      []string // where the load sends its requests: the balancer, or the processes
}

func newCluster(cfg config, dbURL, dataDir string) (*cluster, error) {
	if err := os.MkdirAll(filepath.Join(dataDir, "s3"), 0o755); err != nil {
		return nil, err
	}
	ports := make([]int, cfg.serves+1)
	for i := range ports {
		p, err := cfg.ports.pick()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	redis, err := newRedisServers(cfg, dataDir)
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: cfg.pastebin, adminToken: randomHex(16), redis: redis}
	s3URL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	c.env = pastebinEnv(cfg.env, dbURL, redis.url(), s3URL, c.adminToken)
	extra, err := cfg.extraEnv(dbURL)
	if err != nil {
		return nil, err
	}
	c.env = append(c.env, extra...) // the last value of a variable wins
	c.s3 = &proc{
		name: "s3", path: cfg.versitygw, log: filepath.Join(cfg.dir, "versitygw.log"),
		env: append(cfg.env.list(), "ROOT_ACCESS_KEY_ID="+s3Key, "ROOT_SECRET_ACCESS_KEY="+s3Secret),
		args: []string{"--port", "127.0.0.1:" + strconv.Itoa(ports[0]), "--quiet", "--keep-alive", "--health", "/healthz",
			"posix", filepath.Join(dataDir, "s3")},
		ready: httpReady(s3URL + "/healthz"),
	}
	for i, port := range ports[1:] {
		addr := "127.0.0.1:" + strconv.Itoa(port)
		c.urls = append(c.urls, "http://"+addr)
		c.serves = append(c.serves, &proc{
			name: fmt.Sprintf("serve-%d", i), path: cfg.pastebin, args: []string{"serve"},
			env: append(append([]string(nil), c.env...), "PASTEBIN_ADDR="+addr),
			log: filepath.Join(cfg.dir, fmt.Sprintf("serve-%d.log", i)), ready: httpReady("http://" + addr + "/healthz"),
		})
	}
	c.entry = c.urls
	if cfg.haproxy != "" {
		if err := c.balance(cfg, dataDir); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// pastebinEnv configures the serve processes and the CLI commands for the soak: no create rate
// limit, cleanup every two
// seconds with a watchdog that returns a killed process's claims after 10s, a blob deleter and an
// orphan sweeper that run often, and a small cache-size limit so some pastes are streamed from S3.
// The orphan grace (1m) is far longer than any create takes from upload to commit, so the sweeper
// never takes a blob whose create is still on its way.
func pastebinEnv(e childEnv, dbURL, redisURL, s3URL, adminToken string) []string {
	return append(e.list(),
		"PASTEBIN_DATABASE_URL="+dbURL,
		"PASTEBIN_MIGRATE=true",
		"PASTEBIN_REDIS_URL="+redisURL,
		"PASTEBIN_REDIS_PREFIX=soak:",
		"PASTEBIN_S3_ENDPOINT="+s3URL,
		"PASTEBIN_S3_BUCKET="+s3Bucket,
		"PASTEBIN_S3_ACCESS_KEY_ID="+s3Key,
		"PASTEBIN_S3_SECRET_ACCESS_KEY="+s3Secret,
		"PASTEBIN_ADMIN_TOKEN="+adminToken,
		"PASTEBIN_ALLOW_NEVER=true",
		"PASTEBIN_RATE_CREATE=off", // the load is one client creating far faster than any person
		"PASTEBIN_CACHE_MAX_SIZE=4KiB",
		"PASTEBIN_CLEANUP_WORKERS=2",
		"PASTEBIN_CLEANUP_BATCH_SIZE=100",
		"PASTEBIN_CLEANUP_SCHEDULE=@every 2s",
		"PASTEBIN_CLEANUP_STUCK_AFTER=10s",
		"PASTEBIN_CLEANUP_LOCK_TTL=2s",
		"PASTEBIN_OUTBOX_INTERVAL=2s",
		"PASTEBIN_SWEEP_SCHEDULE=@every 15s",
		"PASTEBIN_ORPHAN_GRACE=1m",
		"PASTEBIN_SHUTDOWN_TIMEOUT=5s",
		"PASTEBIN_LOG_FORMAT=json",
	)
}

func (e childEnv) list() []string {
	env := []string{"PATH=" + e.path}
	if e.home != "" {
		env = append(env, "HOME="+e.home)
	}
	if e.tmp != "" {
		env = append(env, "TMPDIR="+e.tmp)
	}
	return env
}

// all is every process, services first.
func (c *cluster) all() []*proc { return append(append([]*proc{c.s3}, c.redis.nodes...), c.serves...) }

// ensureUp starts every process that is not running: the services, then the serve processes
// together (their migrations take a lock, so starting together is safe). Each gets tries starts
// (0: until ctx ends).
func (c *cluster) ensureUp(ctx context.Context, tries int) error {
	if !c.s3.running() {
		if _, err := c.s3.start(ctx, tries); err != nil {
			return err
		}
	}
	if err := c.redis.ensureUp(ctx, tries); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range c.serves {
		if !p.running() {
			g.Go(func() error { _, err := p.start(gctx, tries); return err })
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return c.ensureBalancer(ctx, tries)
}

// killAll SIGKILLs every process still running.
func (c *cluster) killAll() {
	for _, p := range c.all() {
		p.stop(syscall.SIGKILL)
	}
	if c.haproxy != nil {
		c.haproxy.stop(syscall.SIGKILL)
	}
}

// startWithin starts every process not running, each at most tries times, giving up after d.
func (c *cluster) startWithin(ctx context.Context, d time.Duration, tries int) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.ensureUp(ctx, tries)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
