package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"pastebin/blob"
	"pastebin/cache"
	"pastebin/store/storetest"
	"pastebin/tools/internal/benchdata"
)

// bench holds the services and the prepared data of one benchmark run.
type bench struct {
	cfg      config
	out      io.Writer
	logger   *slog.Logger
	dbs      *benchdata.Databases
	rdb      redis.UniversalClient
	template string // database holding the loaded pastes, copied before each measurement
	bucket   string // bucket holding the blobs cleanup frees
	snapshot benchdata.BucketSnapshot
	dirty    bool // the last measurement deleted blobs or cache entries
}

// dataVersion names the layout of the loaded data; a new layout loads afresh.
const dataVersion = "v3"

// layout names the loaded data and the schema it was loaded into (the migrations): either changed,
// the data loads afresh.
func layout() string { return dataVersion + "_" + storetest.MigrationsHash()[:8] }

func newBench(ctx context.Context, cfg config, out io.Writer) (*bench, error) {
	b := &bench{cfg: cfg, out: out, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		template: fmt.Sprintf("pb_bench_%s_%d_%d", layout(), cfg.expired, int(cfg.shared*100)),
		bucket:   fmt.Sprintf("pb-bench-%s-%d-%d", dataVersion, cfg.expired, int(cfg.shared*100)), dirty: true}
	b.snapshot = benchdata.NewBucketSnapshot(cfg.services.S3DataDir, b.bucket)
	var err error
	if b.dbs, err = benchdata.OpenDatabases(ctx, cfg.services.AdminURL); err != nil {
		return nil, err
	}
	if b.rdb, err = cache.NewClient(cfg.services.RedisURL, cache.ClientOptions{}); err != nil {
		b.dbs.Close()
		return nil, err
	}
	if err := b.prepare(ctx); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bench) close() {
	b.dbs.Close()
	b.rdb.Close()
	b.snapshot.Close()
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// prepare loads the template database and the bucket snapshot, unless an earlier run left them.
// Data of older layouts is dropped.
func (b *bench) prepare(ctx context.Context) error {
	if err := b.dbs.DropOthers(ctx, "pb_bench_", "pb_bench_"+layout()+"_"); err != nil {
		return err
	}
	exists, err := b.dbs.Exists(ctx, b.template)
	if err != nil {
		return err
	}
	if exists && b.snapshot.Exists() {
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

// loadTemplate loads the pastes; live ones far from their expiry, so that the template stays right
// for years of runs.
func (b *bench) loadTemplate(ctx context.Context) error {
	return b.dbs.BuildTemplate(ctx, b.template, storetest.SeedSpec{Pastes: 2 * b.cfg.expired, Expired: b.cfg.expired,
		Shared: b.cfg.shared, Tag: "B", LiveFor: 10 * 365 * 24 * time.Hour})
}

// loadBucket uploads the blobs cleanup will free (content no live paste holds), then snapshots the
// bucket.
func (b *bench) loadBucket(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.dbs.URL(b.template))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT blob_key FROM content c WHERE NOT EXISTS (
		SELECT 1 FROM pastes p WHERE p.content_hash = c.content_hash AND p.expires_at > now())`)
	if err != nil {
		return err
	}
	blobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (benchdata.Blob, error) {
		var key string
		err := r.Scan(&key)
		return benchdata.Blob{Key: key, Content: []byte(key)}, err
	})
	if err != nil {
		return err
	}
	b.logf("uploading the %d blobs cleanup will free", len(blobs))
	return b.cfg.services.LoadBucket(ctx, b.snapshot, blobs)
}

func (b *bench) openBucket(ctx context.Context) (*blob.Bucket, error) {
	return b.cfg.services.OpenBucket(ctx, b.bucket)
}

// restore gives a measurement a fresh database, name, copied from the template, the bucket as
// loaded, and every paste cached in Redis.
func (b *bench) restore(ctx context.Context, name string) error {
	if err := b.dbs.Copy(ctx, b.template, name); err != nil {
		return err
	}
	if !b.dirty {
		return nil
	}
	if err := b.snapshot.Restore(ctx); err != nil {
		return err
	}
	if err := b.fillRedis(ctx); err != nil {
		return err
	}
	b.dirty = false
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
