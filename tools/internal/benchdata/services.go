package benchdata

import (
	"context"
	"log/slog"
	"time"

	"pastebin/blob"
	"pastebin/store"
	"pastebin/store/storetest"
)

// Services are the PostgreSQL, Redis and S3 servers a benchmark runs against: the bench profile of
// scripts/services.sh, which `make bench-*` starts and describes in the environment.
type Services struct {
	AdminURL, RedisURL          string
	S3Endpoint, S3Key, S3Secret string
	S3DataDir                   string // versitygw's data directory, where bucket snapshots are taken
}

// ServicesFromEnv reads the services from the environment scripts/services.sh prints.
func ServicesFromEnv(getenv func(string) string) Services {
	return Services{
		AdminURL: getenv("PASTEBIN_DATABASE_URL"), RedisURL: getenv("PASTEBIN_REDIS_URL"),
		S3Endpoint: getenv("PASTEBIN_TEST_S3_ENDPOINT"), S3Key: getenv("PASTEBIN_TEST_S3_ACCESS_KEY_ID"),
		S3Secret: getenv("PASTEBIN_TEST_S3_SECRET_ACCESS_KEY"), S3DataDir: getenv("PASTEBIN_TEST_S3_DATA_DIR"),
	}
}

// Complete reports whether PostgreSQL, Redis and S3 are all there (and versitygw's data directory,
// if snapshots are needed).
func (s Services) Complete(snapshots bool) bool {
	return s.AdminURL != "" && s.RedisURL != "" && s.S3Endpoint != "" && (!snapshots || s.S3DataDir != "")
}

// OpenBucket opens bucket name on the S3 server, creating it if missing.
func (s Services) OpenBucket(ctx context.Context, name string) (*blob.Bucket, error) {
	return blob.Open(ctx, blob.Config{Endpoint: s.S3Endpoint, Region: "us-east-1", Bucket: name,
		PathStyle: true, AccessKeyID: s.S3Key, SecretAccessKey: s.S3Secret, Timeout: time.Minute})
}

// BuildTemplate loads spec into a new database name: migrated, loaded without indexes, indexed,
// vacuumed and frozen, with pg_prewarm and pg_stat_statements. It is built under another name and
// renamed only once complete, so an interrupted load leaves nothing a later run would take for
// loaded.
func (d *Databases) BuildTemplate(ctx context.Context, name string, spec storetest.SeedSpec) error {
	building := name + "_building"
	if err := d.Drop(ctx, name); err != nil {
		return err
	}
	if err := d.Create(ctx, building); err != nil {
		return err
	}
	st, err := store.Open(ctx, d.URL(building), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	pool := st.Pool()
	err = LoadWithoutIndexes(ctx, pool, []string{"pastes", "content"}, func(ctx context.Context) error {
		return storetest.Load(ctx, pool, spec)
	})
	if err != nil {
		return err
	}
	for _, q := range []string{"VACUUM (FREEZE, ANALYZE)", "CREATE EXTENSION IF NOT EXISTS pg_prewarm"} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return err
		}
	}
	// Only there when the server preloads it (the bench profile does).
	_, _ = pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	st.Close()
	return d.Rename(ctx, building, name)
}
