package benchdata

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// services are the test profile's, which make test starts.
func services(t *testing.T) Services {
	t.Helper()
	s := ServicesFromEnv(os.Getenv)
	if !s.Complete(true) {
		t.Fatal("PostgreSQL, Redis or versitygw is not set: run the tests with `make test`, which starts them")
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestDatabases: a database the tools create is reachable at its URL, with the server URL's
// settings, and gone once dropped.
func TestDatabases(t *testing.T) {
	ctx := context.Background()
	dbs, err := OpenDatabases(ctx, services(t).AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer dbs.Close()
	name := "pb_benchdata_" + randomHex(4)
	if err := dbs.Create(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dbs.Drop(context.Background(), name) })
	conn, err := pgx.Connect(ctx, dbs.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&got)
	conn.Close(ctx)
	if err != nil || got != name {
		t.Fatalf("connected to %q (%v), want %q", got, err, name)
	}
	if err := dbs.Drop(ctx, name); err != nil {
		t.Fatal(err)
	}
	if exists, err := dbs.Exists(ctx, name); err != nil || exists {
		t.Errorf("after Drop: exists %v (%v)", exists, err)
	}
}

// TestOpenDatabasesRefusesKeywords: the databases are named by a URL's path, so a keyword/value
// connection string, which PostgreSQL would accept, is refused rather than turned into the URL of
// no database; the error does not repeat the string, which may hold a password.
func TestOpenDatabasesRefusesKeywords(t *testing.T) {
	u, err := url.Parse(services(t).AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable password=hunter2",
		u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	dbs, err := OpenDatabases(context.Background(), dsn)
	if err == nil {
		dbs.Close()
		t.Fatal("a keyword/value connection string was accepted")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the password: %v", err)
	}
}
