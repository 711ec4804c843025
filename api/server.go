// Package api is the pastebin's HTTP surface: the chi router, handlers, request decoding and
// validation, and the mapping of errors to HTTP statuses.
package api

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"pastebin/blob"
	"pastebin/cache"
	"pastebin/store"
)

// Config is what the HTTP API needs to know.
type Config struct {
	BaseURL        string // public URL of the service; empty: the scheme and host each request came to
	MaxPasteBytes  int64
	Expiry         ExpiryPolicy
	CacheTTL       time.Duration // longest time a paste stays in Redis
	CacheMaxBytes  int64         // pastes up to this size are cached with their bytes
	OpenAPISpec    []byte        // served at /openapi.yaml
	AdminTokenHash []byte        // SHA-256 of the admin token; empty turns the admin API off
	// ConsoleIdleTimeout ends a console session unused this long; 0: DefaultConsoleIdleTimeout.
	ConsoleIdleTimeout time.Duration

	CreateRate        Rate           // creates per client; the zero Rate turns the limit off
	DeleteFailureRate Rate           // wrong-token deletes per client; the zero Rate turns the limit off
	AdminFailureRate  Rate           // wrong admin tokens per client (API and console); the zero Rate turns the limit off
	RateKeyPrefix     string         // prefix of the rate limits' Redis keys
	TrustedProxies    []netip.Prefix // peers whose ClientIPHeader names the client
	// ClientIPHeader is the one header in which a trusted proxy names the client: X-Forwarded-For
	// (the default, when empty) or a header of one address, such as X-Real-IP.
	ClientIPHeader       string
	MaxConcurrentUploads int // creates reading or storing a body at once; 0: no bound
	// MaxUploadsPerClient is one client's share of those; 0: no share of its own.
	MaxUploadsPerClient int
	// MinUploadRate is the least a create's body must deliver in each window while it holds a slot;
	// slower, it is cut off (408). The zero UploadRate asks nothing.
	MinUploadRate        UploadRate
	RenderCacheBytes     int64       // paste pages' rendered content kept in memory; 0: none
	MaxConcurrentRenders int         // paste contents rendered at once; 0: half the processors, at least one
	DedupTiming          DedupTiming // how a create of stored content hides that it was; "": DedupPad
	// MaxHeaderBytes bounds a request's line and headers; larger answers 431. 0: no bound here.
	// The http.Server's own MaxHeaderBytes should be well above it, since net/http answers its 431
	// as plain text.
	MaxHeaderBytes int

	MetricsElsewhere bool // /metrics is served on an address of its own (MetricsHandler), not here
	// HSTSMaxAge is the max-age of Strict-Transport-Security on answers to requests that came over
	// HTTPS; 0: no such header.
	HSTSMaxAge time.Duration
}

// Deps are the services the API runs on.
type Deps struct {
	Logger     *slog.Logger
	Store      *store.Store
	Bucket     *blob.Bucket
	Cache      *cache.Cache
	Registry   *prometheus.Registry
	BlobsFreed func()        // called when a delete freed a blob; may be nil
	Cleanup    CleanupRunner // starts cleanup runs for /admin; may be nil
	Now        func() time.Time
	// RateRedis counts the rate limits across replicas; nil counts them in this process alone.
	RateRedis redis.UniversalClient
	// Draining is closed when the process starts to shut down: /readyz then answers 503, so the load
	// balancer stops sending requests here while those already sent are served. Nil: never.
	Draining <-chan struct{}
}

// NewServer returns the whole HTTP API as one handler.
func NewServer(cfg Config, deps Deps) http.Handler {
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	deps.Logger = slog.New(LogHandler(deps.Logger.Handler())) // every line of a request names it
	ps := &pasteService{
		store: deps.Store, bucket: deps.Bucket, cache: deps.Cache, logger: deps.Logger,
		cfg: cfg, now: now, freed: deps.BlobsFreed, lookups: newCacheLookups(deps.Registry), uploadTimes: newUploadTimes(),
	}
	ps.web = newWebUI(ps, newRenderer(cfg.RenderCacheBytes, cfg.MaxConcurrentRenders, deps.Registry))
	ps.limits = newLimits(cfg, deps, ps)
	return routes(cfg, deps, ps)
}

// writeError answers err: the one place an error becomes a status. Browsers asking for a page get
// one; every other client, and every client of /api/, gets problem details.
func (ps *pasteService) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := asProblem(r, ps.logger, err)
	if pageOrProblem(r) {
		varyAccept(w.Header())
	}
	if wantsPage(r) {
		ps.web.errorPage(w, r, p)
		return
	}
	writeProblem(w, r, p)
}
