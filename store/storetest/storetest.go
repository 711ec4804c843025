// Package storetest gives each test its own real PostgreSQL database, cloned from a migrated
// template in tens of milliseconds and dropped when the test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"pastebin/migrations"
	"pastebin/store"
)

// AdminURL is the database URL the tests connect to for creating and dropping databases. make test
// points it at the private test instance.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("PASTEBIN_DATABASE_URL")
	if u == "" {
		t.Fatal("PASTEBIN_DATABASE_URL is not set: run the tests with `make test`, which starts PostgreSQL")
	}
	return u
}

// PoolerURL is the URL of the test PostgreSQL through pgbouncer in transaction pooling mode, which
// make test starts beside it; empty when it does not run.
func PoolerURL() string { return os.Getenv("PASTEBIN_TEST_POOLER_URL") }

// viaPooler reports whether this test run goes through the pooler: make test runs the store and
// expiry suites a second time so, with PASTEBIN_TEST_VIA_POOLER set. Databases are still created
// and dropped over a direct connection; everything the tests do on them goes through the pooler.
func viaPooler(t testing.TB) bool {
	t.Helper()
	if os.Getenv("PASTEBIN_TEST_VIA_POOLER") == "" {
		return false
	}
	if PoolerURL() == "" {
		t.Fatal("PASTEBIN_TEST_VIA_POOLER is set but PASTEBIN_TEST_POOLER_URL is not: run the tests with `make test`")
	}
	return true
}

// Pooled returns the URL of the database of dbURL through the pooler, set up as the service is
// behind a transaction pooler (store.BehindTransactionPooler): no prepared statement outlives its
// round trip. The test is skipped when no pooler runs.
func Pooled(t testing.TB, dbURL string) string {
	t.Helper()
	if PoolerURL() == "" {
		t.Skip("no pooler: PASTEBIN_TEST_POOLER_URL is not set (make test and make bench start pgbouncer)")
	}
	direct, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(PoolerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = direct.Path
	q := direct.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return u.String()
}

// New returns a store on a fresh, migrated database of its own.
func New(t testing.TB, logger *slog.Logger) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, NewDatabase(t), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// NewDatabase creates a fresh, migrated database and returns its URL: through the pooler when the
// run goes through it (PASTEBIN_TEST_VIA_POOLER), else direct.
func NewDatabase(t testing.TB) string {
	t.Helper()
	u := NewDirectDatabase(t)
	if viaPooler(t) {
		return Pooled(t, u)
	}
	return u
}

// NewDirectDatabase creates a fresh, migrated database and returns its direct URL, for what needs
// a session of its own whatever the run goes through (migrations, session locks).
func NewDirectDatabase(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin := AdminURL(t)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to the test PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	tmpl, err := ensureTemplate(ctx, conn, admin)
	if err != nil {
		t.Fatal(err)
	}
	name := "pb_test_" + randomHex(8)
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tmpl)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { dropDatabase(t, admin, name) })
	return DatabaseURL(admin, name)
}

func dropDatabase(t testing.TB, admin, name string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Errorf("drop %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}

// ensureTemplate creates the template database for the current migrations once, however many test
// processes ask at the same time. Its name carries a hash of the migrations, so a changed migration
// gets a new template.
func ensureTemplate(ctx context.Context, conn *pgx.Conn, admin string) (string, error) {
	name := "pb_template_" + MigrationsHash()[:12]
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7061737465)"); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(7061737465)")
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", building)); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	if err := migrate(ctx, DatabaseURL(admin, building)); err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	// Renamed only once complete, so a crash halfway never leaves a half-migrated template.
	_, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, name))
	return name, err
}

func migrate(ctx context.Context, dbURL string) error {
	s, err := store.Open(ctx, dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Migrate(ctx)
	return err
}

// MigrationsHash names the schema the migrations make: a hash of every migration file. Databases
// built for tests and benchmarks carry it in their names, so a changed migration builds them afresh.
func MigrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))
}

// DatabaseURL is the URL of database name on the server of dbURL, with dbURL's user and settings:
// the one way the tests, the benchmarks and the soak (tools/) name a database they created.
func DatabaseURL(dbURL, name string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
