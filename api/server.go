// Package api is the pastebin's HTTP surface: NewServer wires it, routes.go lists every route, and
// this package holds the JSON and curl API's handlers, the decoding of create requests, the limits
// against abuse, the health checks and the middleware. Below it: web (the public pages), admin (the
// JSON admin API and the console), site (the layout, static files and error pages they share),
// problem (problem details, and the one mapping from errors to them) and request (what a request
// says of its client). The flows they all run live in package paste.
package api

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"pastebin/api/admin"
	"pastebin/api/representation"
	"pastebin/api/request"
	"pastebin/api/site"
	"pastebin/api/web"
	"pastebin/blob"
	"pastebin/blob/codec"
	"pastebin/cache"
	"pastebin/paste"
	"pastebin/store"
)

// Config is what the HTTP API needs to know.
type Config struct {
	BaseURL        string // public URL of the service; empty: the scheme and host each request came to
	MaxPasteBytes  int64
	Expiry         paste.ExpiryPolicy
	CacheTTL       time.Duration // longest time a paste stays in Redis
	CacheMaxBytes  int64         // pastes up to this size are cached with their bytes
	OpenAPISpec    []byte        // served at /openapi.yaml
	AdminTokenHash []byte        // SHA-256 of the admin token; empty turns the admin API off
	// ConsoleIdleTimeout ends a console session unused this long; 0: admin.DefaultIdleTimeout.
	ConsoleIdleTimeout time.Duration

	CreateRate        Rate           // creates per client; the zero Rate turns the limit off
	ReportRate        Rate           // abuse reports per client; the zero Rate turns the limit off
	ReportRetention   time.Duration  // reports' contact addresses are kept this long (the form says so)
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
	RenderCacheBytes     int64             // paste pages' rendered content kept in memory; 0: none
	MaxConcurrentRenders int               // paste contents rendered at once; 0: half the processors, at least one
	DedupTiming          paste.DedupTiming // how a create of stored content hides that it was; "": paste.DedupPad
	// Uncompressed stores new content as it is; else compressed when that makes it smaller.
	Uncompressed bool
	// SpamThreshold is when a content is hot: so many distinct clients created it within a window
	// (docs/design.md, "Spam signal"). The zero value turns the spam signal off.
	SpamThreshold paste.SpamThreshold
	// CreateAccess says who may create: anyone (paste.AccessOpen, or ""), or only the holders of a
	// creator key (paste.AccessKeys).
	CreateAccess paste.CreateAccess
	// DecodedCacheBytes is memory for the original bytes and gzip of compressed pastes, made for
	// clients that take no zstd, in this process; 0: none.
	DecodedCacheBytes int64
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
	BlobsFreed func()              // called when a delete freed a blob; may be nil
	Cleanup    admin.CleanupRunner // starts cleanup runs for /admin; may be nil
	Now        func() time.Time
	// RateRedis counts the rate limits across replicas; nil counts them in this process alone.
	RateRedis redis.UniversalClient
	// Draining is closed when the process starts to shut down: /readyz then answers 503, so the load
	// balancer stops sending requests here while those already sent are served. Nil: never.
	Draining <-chan struct{}
	// UserLatency takes the latency of every request of the routes users call (not /healthz,
	// /readyz, /metrics or /admin): what the cleanup drain's pacing steers by. May be nil.
	UserLatency interface{ Observe(time.Duration) }
}

// NewServer returns the whole HTTP API as one handler: the flows of package paste and the pages,
// the console and the limits around them, routed by routes.go.
func NewServer(cfg Config, deps Deps) http.Handler {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	deps.Logger = slog.New(request.LogHandler(deps.Logger.Handler())) // every line of a request names it
	st := site.New(cfg.BaseURL, deps.Logger, web.Assets(), admin.Assets())
	cd := codec.New()
	reps := representation.NewServer(cd, cfg.DecodedCacheBytes)
	reader := paste.NewReader(deps.Store, deps.Bucket, deps.Cache, cd, paste.ReadConfig{
		CacheTTL: cfg.CacheTTL, CacheMaxBytes: cfg.CacheMaxBytes,
		Filled: func(p store.Paste, original, gzip []byte) { reps.Keep(formsKey(p), original, gzip) },
	}, deps.Now, deps.Registry)
	remover := paste.NewRemover(deps.Store, deps.Cache, deps.BlobsFreed, deps.Logger)
	keys := paste.NewKeys(deps.Store, remover, deps.Now)
	lim := newLimits(cfg, deps, keys)
	spam := paste.NewSpam(deps.Cache, deps.Store, cfg.SpamThreshold, deps.Registry, deps.Logger)
	auth := newAdminAuth(cfg, deps, lim)
	return routes(cfg, deps, &server{
		site: st,
		pages: web.New(st, web.Config{Expiry: cfg.Expiry, MaxPasteBytes: cfg.MaxPasteBytes,
			RenderCacheBytes: cfg.RenderCacheBytes, MaxConcurrentRenders: cfg.MaxConcurrentRenders,
			ReportRetention: cfg.ReportRetention, AskCreatorKey: cfg.CreateAccess == paste.AccessKeys}, deps.Now, deps.Registry),
		console: admin.NewConsole(st, deps.Store, cfg.AdminTokenHash, cfg.ConsoleIdleTimeout, auth),
		creator: paste.NewCreator(deps.Store, deps.Bucket, cd, paste.CreateConfig{
			Expiry: cfg.Expiry, DedupTiming: cfg.DedupTiming, Uncompressed: cfg.Uncompressed, Spam: spam,
			Access: cfg.CreateAccess, Keys: keys,
		}, deps.Now, deps.Logger),
		spam:   spam,
		keys:   keys,
		reps:   reps,
		reader: reader, consumer: paste.NewConsumer(reader, remover), remover: remover, reporter: paste.NewReporter(deps.Store), cases: paste.NewCases(deps.Store, remover),
		deleter: &limitedDelete{remover: remover, failures: lim.failures, refused: lim.refused, rate: cfg.DeleteFailureRate},
		limits:  lim, auth: auth,
	})
}

// server is what the routes are made of, built once by NewServer: routes.go hands each handler the
// few of these it calls, and no handler takes the whole.
type server struct {
	site     *site.Site
	pages    *web.Pages
	console  *admin.Console
	creator  *paste.Creator
	reader   *paste.Reader
	reps     *representation.Server // the codings and ranges the bytes are sent in
	consumer *paste.Consumer
	remover  *paste.Remover
	reporter *paste.Reporter
	cases    *paste.Cases
	keys     *paste.Keys
	deleter  *limitedDelete
	limits   *limits
	auth     *adminAuth
	spam     *paste.Spam // nil: the spam signal is off
}
