package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"pastebin/cache"
	"pastebin/store/storetest"
	"pastebin/tools/internal/benchdata"
)

// dataVersion names the layout of the loaded data; a new layout loads afresh.
const dataVersion = "v1"

// seedTag is the letter of the loaded pastes' codes and contents.
const seedTag = "H"

// bench holds the services and the prepared data of one run.
type bench struct {
	cfg      config
	out      io.Writer
	logger   *slog.Logger
	dbs      *benchdata.Databases
	template string // database holding the loaded pastes, copied before each phase
	bucket   string
	snapshot benchdata.BucketSnapshot
	meta     dataMeta
}

// dataMeta is what the run needs to know of the loaded data, kept beside the bucket's snapshot.
type dataMeta struct {
	Freed        int64     `json:"freed"`         // content rows the drain frees
	RealBlobs    int64     `json:"real_blobs"`    // of those, the ones whose blobs exist in S3: the first freed
	RealUntil    time.Time `json:"real_until"`    // the drain frees those by the time it has claimed every paste expiring by then
	RealPastes   int64     `json:"real_pastes"`   // expired pastes expiring by RealUntil
	LiveSample   []string  `json:"live_sample"`   // codes of live pastes whose blobs exist
	LoadedAt     time.Time `json:"loaded_at"`     // when the data was loaded
	LoadSeconds  float64   `json:"load_seconds"`  // how long loading the database took
	BlobsSeconds float64   `json:"blobs_seconds"` // how long uploading the blobs took
}

func newBench(ctx context.Context, cfg config, out io.Writer) (*bench, error) {
	name := fmt.Sprintf("%s_%s_%d_%d_%d", dataVersion, storetest.MigrationsHash()[:8], cfg.expired, cfg.live, int(cfg.shared*100))
	b := &bench{cfg: cfg, out: out, logger: slog.New(slog.DiscardHandler), template: "pb_heavy_" + name,
		bucket: fmt.Sprintf("pb-heavy-%s-%d-%d-%d-%d", dataVersion, cfg.expired, cfg.live, int(cfg.shared*100), cfg.realBlobs)}
	b.snapshot = benchdata.NewBucketSnapshot(cfg.services.S3DataDir, b.bucket)
	var err error
	if b.dbs, err = benchdata.OpenDatabases(ctx, cfg.services.AdminURL); err != nil {
		return nil, err
	}
	if err := b.setWALBudget(ctx, cfg.walBudget); err != nil {
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
	b.snapshot.Close()
	_ = b.setWALBudget(context.Background(), "")
	b.dbs.Close()
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// prepare loads the template database and the bucket, unless an earlier run left them.
func (b *bench) prepare(ctx context.Context) error {
	if err := b.dbs.DropOthers(ctx, "pb_heavy_", "pb_heavy_"+dataVersion+"_"+storetest.MigrationsHash()[:8]+"_"); err != nil {
		return err
	}
	exists, err := b.dbs.Exists(ctx, b.template)
	if err != nil {
		return err
	}
	if exists && b.snapshot.Exists() && b.readMeta() == nil {
		b.logf("reusing %s and the bucket snapshot loaded %s", b.template, b.meta.LoadedAt.Format(time.DateTime))
		return nil
	}
	if !exists {
		b.logf("loading %d expired and %d live pastes (%.0f%% sharing content) into %s", b.cfg.expired, b.cfg.live, b.cfg.shared*100, b.template)
		start := time.Now()
		if err := b.loadTemplate(ctx); err != nil {
			return fmt.Errorf("load template: %w", err)
		}
		b.meta.LoadSeconds = time.Since(start).Seconds()
		b.logf("database loaded in %s", time.Since(start).Round(time.Second))
	}
	start := time.Now()
	if err := b.loadBucket(ctx); err != nil {
		return fmt.Errorf("load bucket: %w", err)
	}
	b.meta.BlobsSeconds = time.Since(start).Seconds()
	b.logf("bucket loaded in %s", time.Since(start).Round(time.Second))
	b.meta.LoadedAt = time.Now()
	return b.writeMeta()
}

func (b *bench) readMeta() error {
	data, err := os.ReadFile(b.snapshot.Path(".json"))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, &b.meta)
}

func (b *bench) writeMeta() error {
	data, err := json.Marshal(b.meta)
	if err != nil {
		return err
	}
	return os.WriteFile(b.snapshot.Path(".json"), data, 0o644)
}

// loadTemplate loads the pastes: expiries spread over the day before the last hour, as a cohort
// of 30-day pastes created over a day; live pastes far from theirs, so that the template stays
// right for years of runs.
func (b *bench) loadTemplate(ctx context.Context) error {
	return b.dbs.BuildTemplate(ctx, b.template, storetest.SeedSpec{Pastes: b.cfg.expired + b.cfg.live,
		Expired: b.cfg.expired, Shared: b.cfg.shared, Tag: seedTag, ExpiredOver: 24 * time.Hour,
		LiveFor: 10 * 365 * 24 * time.Hour})
}

// loadBucket uploads the blobs of the first content rows the drain frees and of the live sample,
// then snapshots the bucket.
func (b *bench) loadBucket(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.dbs.URL(b.template))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	freed, err := b.firstFreed(ctx, conn)
	if err != nil {
		return err
	}
	sample, err := b.liveSample(ctx, conn)
	if err != nil {
		return err
	}
	b.logf("uploading %d blobs of freed content (of %d the drain frees) and %d of live pastes", len(freed), b.meta.Freed, len(sample))
	return b.cfg.services.LoadBucket(ctx, b.snapshot, append(freed, sample...))
}

// firstFreed returns the blobs of the first -real-blobs content rows the drain frees: it frees a
// content row when it claims the last of its pastes, and it claims in expiry order.
func (b *bench) firstFreed(ctx context.Context, conn *pgx.Conn) ([]benchdata.Blob, error) {
	_, err := conn.Exec(ctx, `CREATE TEMP TABLE freed AS
		SELECT content_hash, max(expires_at) AS last FROM pastes GROUP BY content_hash HAVING max(expires_at) <= now()`)
	if err != nil {
		return nil, err
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM freed`).Scan(&b.meta.Freed); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT c.blob_key, f.last FROM (SELECT * FROM freed ORDER BY last LIMIT $1) f
		JOIN content c USING (content_hash)`, b.cfg.realBlobs)
	if err != nil {
		return nil, err
	}
	var blobs []benchdata.Blob
	var key string
	var last time.Time
	_, err = pgx.ForEachRow(rows, []any{&key, &last}, func() error {
		blobs = append(blobs, benchdata.Blob{Key: key, Content: []byte(key)})
		b.meta.RealUntil = maxTime(b.meta.RealUntil, last)
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.meta.RealBlobs = int64(len(blobs))
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= $1`, b.meta.RealUntil).Scan(&b.meta.RealPastes)
	return blobs, err
}

// liveSample picks live pastes that each have content of their own (the seed's paste i, for i up to
// the number of distinct contents, holds the text "H<i>"), and returns their blobs: their keys and
// the text the seed hashed.
func (b *bench) liveSample(ctx context.Context, conn *pgx.Conn) ([]benchdata.Blob, error) {
	rows, err := conn.Query(ctx, `SELECT p.short_code, c.blob_key FROM pastes p JOIN content c USING (content_hash)
		WHERE p.expires_at > now() AND p.content_hash = sha256(convert_to('H' || ltrim(substr(p.short_code, 2), '0'), 'UTF8'))
		ORDER BY p.short_code LIMIT $1`, b.cfg.liveSample)
	if err != nil {
		return nil, err
	}
	var out []benchdata.Blob
	var code, key string
	_, err = pgx.ForEachRow(rows, []any{&code, &key}, func() error {
		i, err := strconv.Atoi(code[1:])
		if err != nil {
			return err
		}
		b.meta.LiveSample = append(b.meta.LiveSample, code)
		out = append(out, benchdata.Blob{Key: key, Content: []byte(seedTag + strconv.Itoa(i))})
		return nil
	})
	return out, err
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// restore gives a phase a fresh database, name, copied from the template, the bucket as loaded,
// and Redis holding an entry for every expired paste, so the drain's pipelines delete real keys.
func (b *bench) restore(ctx context.Context, name string) error {
	if err := b.dbs.Copy(ctx, b.template, name); err != nil {
		return err
	}
	if err := b.snapshot.Restore(ctx); err != nil {
		return err
	}
	return b.fillRedis(ctx, name)
}

// fillRedis empties Redis and caches every expired paste of database name under the key the
// replicas use.
func (b *bench) fillRedis(ctx context.Context, name string) error {
	rdb, err := cache.NewClient(b.cfg.services.RedisURL, cache.ClientOptions{})
	if err != nil {
		return err
	}
	defer rdb.Close()
	// ASYNC: a synchronous FLUSHALL of ten million keys blocks Redis for about 7 s here, past
	// the client's 3-second read timeout.
	if err := rdb.FlushAllAsync(ctx).Err(); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, b.dbs.URL(name))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT short_code FROM pastes WHERE expires_at <= now()`)
	if err != nil {
		return err
	}
	p := rdb.Pipeline()
	var code string
	_, err = pgx.ForEachRow(rows, []any{&code}, func() error {
		p.Set(ctx, "pb:paste:"+code, "cached paste", 24*time.Hour)
		if p.Len() < 10000 {
			return nil
		}
		_, err := p.Exec(ctx)
		return err
	})
	if err != nil {
		return err
	}
	_, err = p.Exec(ctx)
	return err
}
