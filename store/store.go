// Package store is the PostgreSQL side of the pastebin: every SQL statement and transaction lives here.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"pastebin/migrations"
)

// Sentinel errors. The api package maps them to HTTP statuses.
var (
	ErrNotFound     = errors.New("paste not found")
	ErrGone         = errors.New("paste expired or deleted")
	ErrForbidden    = errors.New("delete token does not match")
	ErrNoContent    = errors.New("no content row for this hash")
	errCodeConflict = errors.New("short code collision")
)

// defaultMaxConns is the pool size unless the database URL sets pool_max_conns.
const defaultMaxConns = 24

// Store is the pastebin's PostgreSQL database.
type Store struct {
	pool        *pgxpool.Pool
	logger      *slog.Logger
	orphanGrace time.Duration // how long the outbox holds an abandoned upload (EnqueueAbandonedUploads)
}

// DefaultOrphanGrace is the orphan grace period unless OrphanGrace says otherwise: the sweeper
// leaves younger untracked blobs alone, and the outbox holds abandoned uploads this long.
const DefaultOrphanGrace = 24 * time.Hour

// Option changes how Open sets the store up.
type Option func(*options) error

type options struct {
	pool        *pgxpool.Config
	url         string
	orphanGrace time.Duration
}

// OrphanGrace sets how long the outbox holds an upload whose create failed before the blob
// deleter may take it (EnqueueAbandonedUploads): the orphan sweeper's grace period, the time after
// which an upload nothing names is surely an orphan.
func OrphanGrace(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("orphan grace %s: want a positive duration", d)
		}
		o.orphanGrace = d
		return nil
	}
}

// BehindTransactionPooler says that url reaches PostgreSQL through a pooler in transaction mode
// (pgbouncer's pool_mode=transaction), which may give each transaction another server connection.
// A statement prepared on one of them would be unknown on the next, so every query then goes as one
// round trip of the extended protocol with an unnamed statement (pgx's QueryExecModeExec), unless
// the URL chose cache_describe, which pgx also documents as safe there. simple_protocol, safe there
// too, is refused by Open anyway (see refuseSimpleProtocol). The store keeps no other session state:
// the only settings it changes are SET LOCAL, inside transactions. Migrations take a session lock
// and need a direct URL.
func BehindTransactionPooler() Option {
	return func(o *options) error {
		cfg := o.pool
		mode := cfg.ConnConfig.DefaultQueryExecMode
		if !strings.Contains(o.url, "default_query_exec_mode") {
			mode = pgx.QueryExecModeExec
		}
		switch mode {
		case pgx.QueryExecModeExec, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeSimpleProtocol:
		default:
			return fmt.Errorf("query exec mode %q keeps statements on one server connection: "+
				"behind a transaction pooler use exec or cache_describe", mode)
		}
		cfg.ConnConfig.DefaultQueryExecMode = mode
		return nil
	}
}

// refuseSimpleProtocol refuses pgx's simple_protocol mode, behind a pooler or not: it sends every
// parameter as a literal in the query text, so the generic plans that tombstone pins (store/release.go)
// become custom plans over literal statuses and arrays, and a finishing transaction that takes
// milliseconds takes hundreds.
func refuseSimpleProtocol(cfg *pgxpool.Config) error {
	if cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol {
		return errors.New("query exec mode simple_protocol sends parameters as literals, which defeats the " +
			"store's pinned generic plans: use exec, cache_describe or the default")
	}
	return nil
}

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string, logger *slog.Logger, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	o := options{pool: cfg, url: url, orphanGrace: DefaultOrphanGrace}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if err := refuseSimpleProtocol(cfg); err != nil {
		return nil, err
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgxpool's default (the CPU count, at least 4) starves pipelined cleanup workers, which hold
		// up to three connections each, beside the HTTP requests.
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	s := &Store{pool: pool, logger: logger, orphanGrace: o.orphanGrace}
	if err := s.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// Pool exposes the connection pool to tests and tools that check invariants with their own SQL.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// Migrate applies every pending migration and returns the resulting schema version.
func (s *Store) Migrate(ctx context.Context) (int64, error) {
	var version int64
	err := s.withMigrations(func(p *goose.Provider) error {
		if _, err := p.Up(ctx); err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		var err error
		version, err = p.GetDBVersion(ctx)
		return err
	})
	return version, err
}

// MigrateDown rolls back the newest migration and returns the resulting schema version.
func (s *Store) MigrateDown(ctx context.Context) (int64, error) {
	var version int64
	err := s.withMigrations(func(p *goose.Provider) error {
		if _, err := p.Down(ctx); err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		var err error
		version, err = p.GetDBVersion(ctx)
		return err
	})
	return version, err
}

// MigrationStatus lists every known migration and whether it is applied.
func (s *Store) MigrationStatus(ctx context.Context) ([]*goose.MigrationStatus, error) {
	var status []*goose.MigrationStatus
	err := s.withMigrations(func(p *goose.Provider) error {
		var err error
		status, err = p.Status(ctx)
		return err
	})
	return status, err
}

// migrationLockID is the advisory lock goose holds while migrating, so replicas starting together
// apply each migration once.
const migrationLockID = 0x7061737465 // "paste"

func (s *Store) withMigrations(fn func(*goose.Provider) error) error {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(s.pool), migrations.FS,
		goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	defer p.Close()
	return fn(p)
}

// isRetryable reports whether a transaction failed only because of a concurrent one (deadlock or
// serialization failure), so running it again is safe and likely to succeed.
func isRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// inTx runs fn in one transaction, again (a few times) if it lost a deadlock to a concurrent batch.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if !isRetryable(err) {
			return err
		}
		s.logger.WarnContext(ctx, "transaction retried after a conflict", "attempt", attempt+1, "err", err)
	}
	return err
}

// inBatchTx is inTx for a transaction whose first statements go with its BEGIN in one round trip
// (pgx.Batch.BeginTx): queue queues them, read reads their results, then more runs on the
// transaction, before the COMMIT.
func (s *Store) inBatchTx(ctx context.Context, queue func(*pgx.Batch), read func(pgx.BatchResults) error, more func(pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.batchTx(ctx, queue, read, more)
		if !isRetryable(err) {
			return err
		}
		s.logger.WarnContext(ctx, "transaction retried after a conflict", "attempt", attempt+1, "err", err)
	}
	return err
}

func (s *Store) batchTx(ctx context.Context, queue func(*pgx.Batch), read func(pgx.BatchResults) error, more func(pgx.Tx) error) error {
	batch := &pgx.Batch{}
	batch.BeginTx(pgx.TxOptions{})
	queue(batch)
	br := s.pool.SendBatch(ctx, batch)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }() // nothing to undo after the commit, or a failure that ended it
	_, err := br.Exec()                     // the BEGIN
	if err == nil {
		err = read(br)
	}
	if err = errors.Join(err, br.Close()); err != nil {
		return err
	}
	if err := more(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func collectStrings(rows pgx.Rows, what string) ([]string, error) {
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ClockSkew is how far this process's clock is ahead of the database's (negative: behind), measured
// with one query and corrected by half its round trip.
func (s *Store) ClockSkew(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	var db time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
		return 0, fmt.Errorf("read the database's clock: %w", err)
	}
	end := time.Now()
	return start.Add(end.Sub(start) / 2).Sub(db), nil
}
