package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"pastebin"
	"pastebin/api"
	"pastebin/api/admin"
	"pastebin/cache"
	"pastebin/paste"
	"pastebin/store"
)

// serveConfig is the configuration of `pastebin serve`.
type serveConfig struct {
	conn            connConfig
	expiry          expiryConfig
	adminToken      string
	adminTokenHex   string
	adminHash       []byte // SHA-256 of the admin token; the token itself is not kept
	adminTokenWeak  string // why the admin token should be replaced, said at start-up; "": nothing
	consoleIdle     duration
	addr            string
	metricsAddr     string
	baseURL         string
	hstsMaxAge      durationOrOff
	maxPasteBytes   byteSize
	defaultExpiry   lifetime
	maxExpiry       lifetime
	allowNever      bool
	cacheTTL        duration
	cacheMaxBytes   byteSize
	renderCache     byteSize
	decodedCache    byteSize
	dedupTiming     string
	createAccess    string
	compression     string
	migrate         bool
	shutdownTimeout duration
	drainDelay      time.Duration
	limits          limitsConfig
}

// limitsConfig are the limits against abuse: rates per client, uploads in memory, and the HTTP
// server's timeouts and header size, which keep a slow client from holding a connection.
type limitsConfig struct {
	createRate        rate
	reportRate        rate
	deleteFailureRate rate
	adminFailureRate  rate
	spamThreshold     rate
	trustedProxies    prefixList
	clientIPHeader    headerName
	maxUploads        int
	maxClientUploads  int
	minUploadRate     uploadRate
	maxRenders        int
	readHeaderTimeout duration
	readTimeout       duration
	writeTimeout      duration
	idleTimeout       duration
	maxHeaderBytes    byteSize
}

// register adds the limits' flags, with their defaults in c.
func (c *limitsConfig) register(fs *flag.FlagSet) {
	*c = limitsConfig{
		createRate: rate{Requests: 120, Window: time.Minute}, reportRate: rate{Requests: 20, Window: time.Hour}, deleteFailureRate: rate{Requests: 10, Window: time.Minute},
		adminFailureRate: rate{Requests: 10, Window: time.Minute}, spamThreshold: rate{Requests: 20, Window: 10 * time.Minute},
		clientIPHeader: "X-Forwarded-For",
		maxUploads:     16, maxClientUploads: 4, minUploadRate: uploadRate{Bytes: 4 << 10, Window: 5 * time.Second},
		readHeaderTimeout: duration(10 * time.Second), readTimeout: duration(2 * time.Minute),
		writeTimeout: duration(2 * time.Minute), idleTimeout: duration(2 * time.Minute), maxHeaderBytes: 64 << 10,
	}
	fs.Var(&c.createRate, "rate-create", `creates per client, such as 60/1m; "off" for no limit`)
	fs.Var(&c.reportRate, "rate-report", `abuse reports filed per client (form and API together), such as 20/1h; "off" for no limit`)
	fs.Var(&c.deleteFailureRate, "rate-delete-failures", `deletes with a wrong token per client, such as 10/1m; "off" for no limit`)
	fs.Var(&c.adminFailureRate, "rate-admin-failures", `wrong admin tokens per client, bearer tokens and the console's sign-in together, such as 10/1m; "off" for no limit`)
	fs.Var(&c.spamThreshold, "spam-threshold", `when a content is hot for the spam signal: distinct clients that created it within a window, such as 20/10m; "off" for no signal`)
	fs.Var(&c.trustedProxies, "trusted-proxies", "comma-separated CIDR ranges of proxies whose client address header (-client-ip-header) is believed; empty: none")
	fs.Var(&c.clientIPHeader, "client-ip-header", "the one header in which the trusted proxies name the client: X-Forwarded-For, or a header of one address such as X-Real-IP")
	fs.IntVar(&c.maxUploads, "max-concurrent-uploads", c.maxUploads, "creates reading or storing a body at once; 0 for no bound")
	fs.IntVar(&c.maxRenders, "max-concurrent-renders", 0, "paste pages highlighting their content at once; 0: half the processors, at least one")
	fs.IntVar(&c.maxClientUploads, "max-uploads-per-client", c.maxClientUploads, "one client's share of those; past it the client's creates wait a second, then 429; 0 for no share of its own")
	fs.Var(&c.minUploadRate, "min-upload-rate", `least a create's body must deliver in each window while it holds an upload slot, such as 4KiB/5s; slower is cut off (408); "off" for no minimum`)
	fs.Var(&c.readHeaderTimeout, "read-header-timeout", "longest time a client may take to send a request's headers")
	fs.Var(&c.readTimeout, "read-timeout", "longest time a client may take to send a whole request, body included")
	fs.Var(&c.writeTimeout, "write-timeout", "longest time from the end of a request's headers to the end of the answer")
	fs.Var(&c.idleTimeout, "idle-timeout", "how long an idle keep-alive connection is kept open")
	fs.Var(&c.maxHeaderBytes, "max-header-size", "largest request headers accepted; larger answers 431")
}

func parseServeConfig(args []string, getenv func(string) string, stdout io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := c.flags(stdout)
	if err := parseFlags(fs, args, getenv); err != nil {
		return c, err
	}
	if err := c.expiryPolicy().Validate(); err != nil {
		return c, fmt.Errorf("expiry settings: %w", err)
	}
	if _, err := paste.ParseDedupTiming(c.dedupTiming); err != nil {
		return c, err
	}
	if _, err := paste.ParseCreateAccess(c.createAccess); err != nil {
		return c, err
	}
	if c.compression != "zstd" && c.compression != "off" {
		return c, fmt.Errorf("compression %q: want zstd or off", c.compression)
	}
	if c.migrate && c.conn.pooler == "transaction" && c.conn.migrateURL == "" {
		return c, errors.New("behind a transaction pooler, migrations need a direct connection: set PASTEBIN_MIGRATE_DATABASE_URL, or PASTEBIN_MIGRATE=false")
	}
	var err error
	if c.adminHash, c.adminTokenWeak, err = adminHash(c.adminToken, c.adminTokenHex); err != nil {
		return c, err
	}
	c.adminToken = ""
	return c, nil
}

// flags registers serve's flags on a new flag set, with their defaults in c.
func (c *serveConfig) flags(stdout io.Writer) *flag.FlagSet {
	*c = serveConfig{
		maxPasteBytes: 10 << 20, defaultExpiry: lifetime(7 * 24 * time.Hour), maxExpiry: lifetime(365 * 24 * time.Hour),
		cacheTTL: duration(time.Hour), cacheMaxBytes: 256 << 10, renderCache: 32 << 20, decodedCache: 32 << 20, shutdownTimeout: duration(15 * time.Second),
		consoleIdle: duration(admin.DefaultIdleTimeout), hstsMaxAge: durationOrOff(365 * 24 * time.Hour),
	}
	fs := newFlagSet("serve", "Serves the HTTP API and runs the cleanup workers.", stdout)
	c.conn.register(fs)
	c.expiry.register(fs)
	fs.StringVar(&c.adminToken, "admin-token", "", "token for /admin (as Authorization: Bearer); empty turns /admin off. Only its hash is kept")
	fs.StringVar(&c.adminTokenHex, "admin-token-sha256", "", "hex SHA-256 of the admin token, instead of the token itself")
	fs.Var(&c.consoleIdle, "console-idle-timeout", "a console session unused this long ends (it lasts 12 hours at most anyway)")
	fs.StringVar(&c.addr, "addr", ":8080", "address to listen on")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "address of its own for /metrics, kept off the public one; empty: /metrics on -addr")
	fs.StringVar(&c.baseURL, "base-url", "", "public URL of the service, used in answers and trusted as the site's own origin; empty: the scheme and host of each request")
	fs.Var(&c.hstsMaxAge, "hsts-max-age", `max-age of Strict-Transport-Security on answers to requests that came over HTTPS; "off" for none`)
	fs.Var(&c.maxPasteBytes, "max-paste-size", "largest paste accepted")
	fs.Var(&c.defaultExpiry, "default-expiry", `expiry of pastes that name none (10m, 1h, 1d, 1w, 30d, seconds, or "never")`)
	fs.Var(&c.maxExpiry, "max-expiry", "longest expiry a paste may ask for")
	fs.BoolVar(&c.allowNever, "allow-never", false, `accept expires_in=never (pastes that never expire)`)
	fs.Var(&c.cacheTTL, "cache-ttl", "longest time a paste stays in Redis")
	fs.Var(&c.cacheMaxBytes, "cache-max-size", "pastes up to this size are cached in Redis with their bytes")
	fs.Var(&c.renderCache, "render-cache-size", "memory for paste pages' highlighted content, in this process; 0: none")
	fs.Var(&c.decodedCache, "decoded-cache-size", "memory for the original bytes and gzip of compressed pastes, made for clients that take no zstd, in this process; 0: none")
	fs.StringVar(&c.compression, "compression", "zstd", `how new content is stored in S3: "zstd" (compressed when that makes it smaller) or "off" (as it is); reads serve either`)
	fs.StringVar(&c.createAccess, "create-access", string(paste.AccessOpen), `who may create: "open" (anyone) or "keys" (only holders of a creator key, sent as Authorization: Bearer)`)
	fs.StringVar(&c.dedupTiming, "dedup-timing", string(paste.DedupPad), `how a create of stored content hides that it was: "pad" (answers as late as an upload of its size) or "off" (answers at once, which tells)`)
	fs.BoolVar(&c.migrate, "migrate", true, "apply pending database migrations at start-up")
	fs.Var(&c.shutdownTimeout, "shutdown-timeout", "how long to wait for requests in flight on SIGTERM")
	fs.DurationVar(&c.drainDelay, "drain-delay", 0, "on SIGTERM, how long /readyz answers 503 before the listener closes, so a load balancer stops sending requests first")
	c.limits.register(fs)
	return fs
}

func (c serveConfig) expiryPolicy() paste.ExpiryPolicy {
	return paste.ExpiryPolicy{Default: time.Duration(c.defaultExpiry), Max: time.Duration(c.maxExpiry), AllowNever: c.allowNever}
}

// runServe serves the API until SIGINT or SIGTERM, then drains (see serveHTTP).
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := parseServeConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	logger, err := cfg.conn.newLogger(stdout)
	if err != nil {
		return err
	}
	ctx, hurry, stop := notifyStop(ctx)
	defer stop()

	// Creates hold their abandoned uploads for the grace period the sweeper waits for too.
	cfg.conn.storeOptions = append(cfg.conn.storeOptions, store.OrphanGrace(time.Duration(cfg.expiry.orphanGrace)))
	svc, err := cfg.conn.open(ctx, logger)
	if err != nil {
		return err
	}
	defer svc.close()
	if cfg.migrate {
		if err := migrateAtStart(ctx, cfg.conn, svc, logger); err != nil {
			return err
		}
	}

	warnClockSkew(ctx, svc, logger)
	if cfg.adminTokenWeak != "" {
		logger.Warn(cfg.adminTokenWeak)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.expiry.warnPacing(logger)
	users := svc.cache.NewLatencyWindows(usersLatency)
	expirer, err := cfg.expiry.newExpirer(svc, users, logger, reg)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	handler := api.NewServer(api.Config{
		BaseURL: cfg.baseURL, MaxPasteBytes: int64(cfg.maxPasteBytes), Expiry: cfg.expiryPolicy(),
		CacheTTL: time.Duration(cfg.cacheTTL), CacheMaxBytes: int64(cfg.cacheMaxBytes), OpenAPISpec: pastebin.OpenAPISpec,
		AdminTokenHash: cfg.adminHash, ConsoleIdleTimeout: time.Duration(cfg.consoleIdle), CreateRate: api.Rate(cfg.limits.createRate),
		ReportRate: api.Rate(cfg.limits.reportRate), ReportRetention: time.Duration(cfg.expiry.reportRetention),
		DeleteFailureRate: api.Rate(cfg.limits.deleteFailureRate), AdminFailureRate: api.Rate(cfg.limits.adminFailureRate),
		RateKeyPrefix:  cfg.conn.redisPrefix + "rate:",
		TrustedProxies: cfg.limits.trustedProxies, ClientIPHeader: string(cfg.limits.clientIPHeader),
		MaxConcurrentUploads: cfg.limits.maxUploads, MaxUploadsPerClient: cfg.limits.maxClientUploads,
		MinUploadRate:    api.UploadRate(cfg.limits.minUploadRate),
		MetricsElsewhere: cfg.metricsAddr != "", HSTSMaxAge: time.Duration(cfg.hstsMaxAge),
		MaxHeaderBytes:   int(cfg.limits.maxHeaderBytes),
		RenderCacheBytes: int64(cfg.renderCache), MaxConcurrentRenders: cfg.limits.maxRenders,
		DedupTiming: paste.DedupTiming(cfg.dedupTiming), Uncompressed: cfg.compression == "off",
		CreateAccess:      paste.CreateAccess(cfg.createAccess),
		DecodedCacheBytes: int64(cfg.decodedCache),
		SpamThreshold:     paste.SpamThreshold{Clients: cfg.limits.spamThreshold.Requests, Window: cfg.limits.spamThreshold.Window},
	}, api.Deps{Logger: logger, Store: svc.store, Bucket: svc.bucket, Cache: svc.cache, Registry: reg,
		BlobsFreed: expirer.Kick, Cleanup: expirer, RateRedis: svc.cache.Client(), Draining: ctx.Done(),
		UserLatency: users})

	g.Go(func() error { return serveHTTP(ctx, cfg, handler, api.MetricsHandler(reg), hurry, logger) })
	g.Go(func() error { return expirer.Run(ctx) })
	g.Go(func() error { users.Run(ctx); return nil })
	return g.Wait()
}

// warnClockSkew says at start-up when this machine's clock and the database's disagree by more than
// half of what the cache tolerates: past cache.SkewMargin, a cached paste could be served a few
// seconds past its expiry by the database's clock.
func warnClockSkew(ctx context.Context, svc *services, logger *slog.Logger) {
	skew, err := svc.store.ClockSkew(ctx)
	if err != nil {
		logger.Warn("clock skew not measured", "err", err)
		return
	}
	if skew.Abs() > cache.SkewMargin/2 {
		logger.Warn("this machine's clock and PostgreSQL's disagree: synchronise them (NTP)",
			"skew", skew.Round(time.Millisecond).String(), "tolerated", cache.SkewMargin.String())
	}
}

// newHTTPServer returns the server of handler. Its timeouts keep a slow client from holding a
// connection: headers sent byte by byte (slowloris) are cut at the read-header timeout, a body
// trickled in at the read timeout, a reader that stops reading at the write timeout. The API
// answers headers over the configured size 431 as problem details; net/http's own bound, whose 431
// is plain text, is headerBoundFactor times that, for what is far larger.
func newHTTPServer(ctx context.Context, c limitsConfig, handler http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: time.Duration(c.readHeaderTimeout), ReadTimeout: time.Duration(c.readTimeout),
		WriteTimeout: time.Duration(c.writeTimeout), IdleTimeout: time.Duration(c.idleTimeout),
		MaxHeaderBytes: headerBoundFactor * int(c.maxHeaderBytes),
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// headerBoundFactor is how far past PASTEBIN_MAX_HEADER_SIZE net/http still reads headers, for the
// API to answer them: room for headers somewhat too large, while a connection still holds at most
// a few times the configured size before its headers are complete.
const headerBoundFactor = 4
