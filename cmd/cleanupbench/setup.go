package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"pastebin/blob"
	"pastebin/cache"
	"pastebin/store"
	"pastebin/store/storetest"
)

// bench holds the services and the prepared data of one benchmark run.
type bench struct {
	cfg      config
	out      io.Writer
	logger   *slog.Logger
	admin    *pgx.Conn
	rdb      redis.UniversalClient
	template string // database holding the loaded pastes, copied before each measurement
	bucket   string // bucket holding the blobs cleanup frees
	snapshot string // hard-linked copy of the bucket's folder, restored before each measurement
	trash    string // used copies of the bucket's folder, deleted once measuring is over
	dirty    bool   // the last measurement deleted blobs or cache entries
}

// dataVersion names the layout of the loaded data; a new layout loads afresh.
const dataVersion = "v2"

func newBench(ctx context.Context, cfg config, out io.Writer) (*bench, error) {
	b := &bench{cfg: cfg, out: out, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		template: fmt.Sprintf("pb_bench_%s_%d_%d", dataVersion, cfg.expired, int(cfg.shared*100)),
		bucket:   fmt.Sprintf("pb-bench-%s-%d-%d", dataVersion, cfg.expired, int(cfg.shared*100)), dirty: true}
	b.snapshot = filepath.Join(filepath.Dir(cfg.s3DataDir), "snapshots", b.bucket)
	b.trash = filepath.Join(filepath.Dir(cfg.s3DataDir), "trash")
	var err error
	if b.admin, err = pgx.Connect(ctx, cfg.adminURL); err != nil {
		return nil, err
	}
	if b.rdb, err = cache.NewClient(cfg.redisURL, cache.ClientOptions{}); err != nil {
		return nil, err
	}
	if err := b.prepare(ctx); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bench) close() {
	b.admin.Close(context.Background())
	b.rdb.Close()
	os.RemoveAll(b.trash)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (b *bench) dbURL(name string) string {
	u, _ := url.Parse(b.cfg.adminURL)
	u.Path = "/" + name
	return u.String()
}

// prepare loads the template database and the bucket snapshot, unless an earlier run left them.
// Data of older layouts is dropped.
func (b *bench) prepare(ctx context.Context) error {
	rows, err := b.admin.Query(ctx, `SELECT datname FROM pg_database
		WHERE datname LIKE 'pb_bench_%' AND datname NOT LIKE 'pb_bench_`+dataVersion+`_%'`)
	if err != nil {
		return err
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, db := range stale {
		if _, err := b.admin.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	var exists bool
	if err := b.admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, b.template).Scan(&exists); err != nil {
		return err
	}
	if _, err := os.Stat(b.snapshot); exists && err == nil {
		b.logf("reusing %s and the bucket snapshot from an earlier run", b.template)
		return nil
	}
	start := time.Now()
	b.logf("loading %d expired and %d live pastes (%.0f%% sharing content) into %s", b.cfg.expired, b.cfg.expired, b.cfg.shared*100, b.template)
	if err := b.loadTemplate(ctx); err != nil {
		return fmt.Errorf("load template: %w", err)
	}
	if err := b.loadBucket(ctx); err != nil {
		return fmt.Errorf("load bucket: %w", err)
	}
	b.logf("prepared in %s", time.Since(start).Round(time.Second))
	return nil
}

func (b *bench) loadTemplate(ctx context.Context) error {
	building := b.template + "_building"
	for _, q := range []string{"DROP DATABASE IF EXISTS " + b.template, "DROP DATABASE IF EXISTS " + building, "CREATE DATABASE " + building} {
		if _, err := b.admin.Exec(ctx, q); err != nil {
			return err
		}
	}
	st, err := store.Open(ctx, b.dbURL(building), b.logger)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	spec := storetest.SeedSpec{Pastes: 2 * b.cfg.expired, Expired: b.cfg.expired, Shared: b.cfg.shared, Tag: "B"}
	if _, err := storetest.Seed(ctx, st.Pool(), spec); err != nil {
		return err
	}
	for _, q := range []string{"CREATE EXTENSION IF NOT EXISTS pg_prewarm", "VACUUM (FREEZE, ANALYZE)"} {
		if _, err := st.Pool().Exec(ctx, q); err != nil {
			return err
		}
	}
	// Only there when the server preloads it (the bench profile does): for -statements.
	_, _ = st.Pool().Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	st.Close()
	_, err = b.admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, b.template))
	return err
}

// loadBucket uploads the blobs cleanup will free (content no live paste holds), then snapshots the
// bucket's folder in versitygw's data directory with hard links: restoring it takes seconds, where
// uploading again would take minutes.
func (b *bench) loadBucket(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.dbURL(b.template))
	if err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT blob_key FROM content c WHERE NOT EXISTS (
		SELECT 1 FROM pastes p WHERE p.content_hash = c.content_hash AND p.expires_at > now())`)
	if err != nil {
		conn.Close(ctx)
		return err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	conn.Close(ctx)
	if err != nil {
		return err
	}
	bucket, err := b.openBucket(ctx)
	if err != nil {
		return err
	}
	b.logf("uploading the %d blobs cleanup will free", len(keys))
	var g errgroup.Group
	g.SetLimit(32)
	for _, k := range keys {
		g.Go(func() error { return bucket.Put(ctx, k, []byte(k)) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := os.RemoveAll(b.snapshot); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(b.snapshot), 0o755); err != nil {
		return err
	}
	return exec.CommandContext(ctx, "cp", "-al", filepath.Join(b.cfg.s3DataDir, b.bucket), b.snapshot).Run()
}

func (b *bench) openBucket(ctx context.Context) (*blob.Bucket, error) {
	return blob.Open(ctx, blob.Config{Endpoint: b.cfg.s3Endpoint, Region: "us-east-1", Bucket: b.bucket,
		PathStyle: true, AccessKeyID: b.cfg.s3Key, SecretAccessKey: b.cfg.s3Secret, Timeout: time.Minute})
}

// restore gives a measurement a fresh database, name, copied from the template, the bucket as
// loaded, and every paste cached in Redis.
func (b *bench) restore(ctx context.Context, name string) error {
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)",
		fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", name, b.template)} {
		if _, err := b.admin.Exec(ctx, q); err != nil {
			return err
		}
	}
	if b.dirty {
		if err := b.restoreBucket(ctx); err != nil {
			return err
		}
		if err := b.fillRedis(ctx); err != nil {
			return err
		}
		b.dirty = false
	}
	// Same starting point for everyone: the relations in shared buffers, nothing dirty.
	conn, err := pgx.Connect(ctx, b.dbURL(name))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SELECT pg_prewarm(c.oid) FROM pg_class c
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i'); CHECKPOINT`)
	return err
}

// restoreBucket puts the bucket's folder back as loaded: the used copy moves aside (deleted at the
// end, not between measurements) and a hard-linked copy of the snapshot takes its place.
func (b *bench) restoreBucket(ctx context.Context) error {
	live := filepath.Join(b.cfg.s3DataDir, b.bucket)
	if err := os.MkdirAll(b.trash, 0o755); err != nil {
		return err
	}
	used, err := os.MkdirTemp(b.trash, "used-")
	if err != nil {
		return err
	}
	if err := os.Rename(live, filepath.Join(used, b.bucket)); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := exec.CommandContext(ctx, "cp", "-al", b.snapshot, live).Run(); err != nil {
		return fmt.Errorf("restore bucket: %w", err)
	}
	return nil
}

// fillRedis caches every expired paste, so the subsystem's pipeline deletes real keys.
func (b *bench) fillRedis(ctx context.Context) error {
	err := cache.ForEachMaster(ctx, b.rdb, func(ctx context.Context, node *redis.Client) error {
		return node.FlushDB(ctx).Err()
	})
	if err != nil {
		return err
	}
	for start := 1; start <= 2*b.cfg.expired; start += 10000 {
		_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < start+10000 && i <= 2*b.cfg.expired; i++ {
				p.Set(ctx, fmt.Sprintf("pb:paste:B%010d", i), "cached paste", time.Hour)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
