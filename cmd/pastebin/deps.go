package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/term"

	"pastebin/api/request"
	"pastebin/blob"
	"pastebin/cache"
	"pastebin/store"
)

// connConfig says where PostgreSQL, Redis and S3 are; every command that touches data shares it.
type connConfig struct {
	databaseURL   string
	migrateURL    string // direct URL for migrations; empty: databaseURL
	pooler        string // what databaseURL goes through: "" (PostgreSQL itself) or "transaction"
	redisURL      string
	redisPrefix   string
	s3            blob.Config
	embeddedS3Dir string
	logFormat     string
	logLevel      string
	storeOptions  []store.Option // what the command sets up beyond the connection (serve: the orphan grace)
}

// register adds the flags of every connection and of logging.
func (c *connConfig) register(fs *flag.FlagSet) {
	c.registerDatabase(fs)
	fs.StringVar(&c.redisURL, "redis-url", "redis://127.0.0.1:6379/0", "Redis URL; a Redis Cluster: redis+cluster://host:port?addr=host2:port&addr=host3:port")
	fs.StringVar(&c.redisPrefix, "redis-prefix", "pb:", "prefix of every Redis key")
	fs.StringVar(&c.s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL; empty starts an embedded S3 server on 127.0.0.1")
	fs.StringVar(&c.s3.Bucket, "s3-bucket", "pastebin", "S3 bucket, created if missing")
	fs.StringVar(&c.s3.Region, "s3-region", "us-east-1", "S3 region")
	fs.StringVar(&c.s3.AccessKeyID, "s3-access-key-id", "", "S3 access key id; empty uses the AWS default credential chain")
	fs.StringVar(&c.s3.SecretAccessKey, "s3-secret-access-key", "", "S3 secret access key")
	fs.BoolVar(&c.s3.PathStyle, "s3-path-style", true, "address the bucket in the path rather than the host name")
	fs.StringVar(&c.embeddedS3Dir, "embedded-s3-dir", ".pastebin/s3", "where the embedded S3 server keeps its data")
}

// registerDatabase adds the flags of the database connection and of logging alone.
func (c *connConfig) registerDatabase(fs *flag.FlagSet) {
	fs.StringVar(&c.databaseURL, "database-url", "postgres://postgres@127.0.0.1:5432/pastebin?sslmode=disable", "PostgreSQL connection URL (pgx's default_query_exec_mode=simple_protocol is refused)")
	fs.StringVar(&c.pooler, "database-pooler", "", `"transaction" when -database-url goes through a pooler in transaction mode (pgbouncer); empty when it reaches PostgreSQL or a pooler in session mode`)
	fs.StringVar(&c.migrateURL, "migrate-database-url", "", "direct PostgreSQL URL for migrations, whose lock needs a session of its own; empty: -database-url")
	fs.StringVar(&c.logFormat, "log-format", "auto", "log format: json, text, or auto (text on a terminal)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

// newLogger builds the one logger of the process.
func (c *connConfig) newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	format := c.logFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	// request.LogHandler adds the request id to every line logged while serving a request, from
	// whichever package logs it.
	switch format {
	case "json":
		return slog.New(request.LogHandler(slog.NewJSONHandler(w, opts))), nil
	case "text":
		return slog.New(request.LogHandler(slog.NewTextHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("log format %q: want json, text or auto", c.logFormat)
}

// redisLogger sends go-redis's own messages (a failed dial per attempt while Redis is down) to the
// process's logger at debug level: the cache already says once, structured, when Redis goes away.
type redisLogger struct{ logger *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis client", "message", fmt.Sprintf(format, v...))
}

// openStore connects to the database the way -database-pooler says it is reached.
func (c *connConfig) openStore(ctx context.Context, logger *slog.Logger) (*store.Store, error) {
	switch c.pooler {
	case "":
		return store.Open(ctx, c.databaseURL, logger, c.storeOptions...)
	case "transaction":
		return store.Open(ctx, c.databaseURL, logger, append(c.storeOptions, store.BehindTransactionPooler())...)
	}
	return nil, fmt.Errorf("database pooler %q: want transaction, or empty", c.pooler)
}

// openMigrator connects to the database for migrations: goose holds a session-level advisory lock
// for the whole run (so replicas starting together migrate once), which a pooler in transaction
// mode would take on one server connection and try to release on another.
func (c *connConfig) openMigrator(ctx context.Context, logger *slog.Logger) (*store.Store, error) {
	if c.migrateURL != "" {
		return store.Open(ctx, c.migrateURL, logger)
	}
	if c.pooler == "transaction" {
		return nil, errors.New("behind a transaction pooler, migrations need a direct connection: set PASTEBIN_MIGRATE_DATABASE_URL")
	}
	return c.openStore(ctx, logger)
}

// services are the connections a command works with. close releases all of them.
type services struct {
	store    *store.Store
	cache    *cache.Cache
	bucket   *blob.Bucket
	embedded *blob.Embedded
}

func (s *services) close() {
	if s.store != nil {
		s.store.Close()
	}
	if s.cache != nil {
		s.cache.Close()
	}
	if s.embedded != nil {
		s.embedded.Close()
	}
}

// open connects to PostgreSQL, Redis and S3, starting the embedded S3 server when no endpoint is set.
// Redis is not contacted here: the service runs, slower, while it is down.
func (c *connConfig) open(ctx context.Context, logger *slog.Logger) (*services, error) {
	svc, err := c.openWithoutS3(ctx, logger)
	if err != nil {
		return nil, err
	}
	if svc.bucket, err = c.openBucket(ctx, svc, logger); err != nil {
		svc.close()
		return nil, err
	}
	return svc, nil
}

// openWithoutS3 connects to PostgreSQL and Redis alone, for commands that never touch a blob.
func (c *connConfig) openWithoutS3(ctx context.Context, logger *slog.Logger) (_ *services, err error) {
	svc := &services{}
	defer func() {
		if err != nil {
			svc.close()
		}
	}()
	if svc.store, err = c.openStore(ctx, logger); err != nil {
		return nil, err
	}
	// Short timeouts: a cache that does not answer quickly is worth less than no cache.
	svc.cache, err = cache.OpenURL(c.redisURL, cache.ClientOptions{
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		PoolTimeout: time.Second, MaxRetries: 1,
	}, c.redisPrefix, logger)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	// go-redis keeps its logger in a package variable; this process has one logger, so set it here.
	redis.SetLogger(redisLogger{logger})
	return svc, nil
}

// openBucket opens the configured S3 bucket. Without an endpoint it starts the embedded server,
// or, when another process (a running serve) holds the embedded store, uses that process's server.
func (c *connConfig) openBucket(ctx context.Context, svc *services, logger *slog.Logger) (*blob.Bucket, error) {
	cfg := c.s3
	if cfg.Endpoint == "" {
		e, err := blob.StartEmbedded(c.embeddedS3Dir)
		switch {
		case errors.Is(err, blob.ErrEmbeddedBusy):
			if cfg.Endpoint, err = blob.RunningEmbedded(c.embeddedS3Dir); err != nil {
				return nil, err
			}
			logger.Info("using the embedded S3 server of the running pastebin", "endpoint", cfg.Endpoint)
		case err != nil:
			return nil, err
		default:
			svc.embedded = e
			logger.Info("embedded S3 server started", "endpoint", e.Endpoint, "dir", c.embeddedS3Dir)
			return e.Bucket(cfg.Bucket) // in process: the endpoint is for other processes
		}
		cfg.PathStyle, cfg.AccessKeyID, cfg.SecretAccessKey = true, "embedded", "embedded"
	}
	return blob.Open(ctx, cfg)
}
