package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"pastebin/blob"
	"pastebin/blob/blobtest"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// testEnv is the environment of a pastebin process on its own database and bucket.
func testEnv(t testing.TB) map[string]string {
	t.Helper()
	s3 := blobtest.Config(t)
	t.Cleanup(func() { blobtest.Remove(t, s3) })
	return map[string]string{
		"PASTEBIN_DATABASE_URL":         storetest.NewDatabase(t),
		"PASTEBIN_REDIS_URL":            cachetest.URL(t, cachetest.Single),
		"PASTEBIN_REDIS_PREFIX":         "pbtest:cmd:" + s3.Bucket + ":",
		"PASTEBIN_S3_ENDPOINT":          s3.Endpoint,
		"PASTEBIN_S3_BUCKET":            s3.Bucket,
		"PASTEBIN_S3_ACCESS_KEY_ID":     s3.AccessKeyID,
		"PASTEBIN_S3_SECRET_ACCESS_KEY": s3.SecretAccessKey,
		"PASTEBIN_ADDR":                 "127.0.0.1:0",
		"PASTEBIN_LOG_FORMAT":           "json",
	}
}

// deployment is a migrated deployment on its own database and bucket, seeded with pastes whose
// blobs are in the bucket, for the operator commands.
type deployment struct {
	env    map[string]string
	store  *store.Store
	bucket *blob.Bucket
}

func newDeployment(t testing.TB, spec storetest.SeedSpec) deployment {
	t.Helper()
	ctx := context.Background()
	env := testEnv(t)
	if err := run(ctx, []string{"pastebin", "migrate"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, env["PASTEBIN_DATABASE_URL"], slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	keys, err := storetest.Seed(ctx, st.Pool(), spec)
	if err != nil {
		t.Fatal(err)
	}
	bucket := blobtest.Open(t, blob.Config{Endpoint: env["PASTEBIN_S3_ENDPOINT"], Bucket: env["PASTEBIN_S3_BUCKET"],
		Region: "us-east-1", PathStyle: true, AccessKeyID: env["PASTEBIN_S3_ACCESS_KEY_ID"], SecretAccessKey: env["PASTEBIN_S3_SECRET_ACCESS_KEY"]})
	for _, k := range keys {
		if err := bucket.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	return deployment{env: env, store: st, bucket: bucket}
}

// startServe runs `pastebin serve` in the background and returns its base URL and a function that
// stops it (as SIGTERM would) and returns run's error.
func startServe(t testing.TB, env map[string]string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"pastebin", "serve"}, func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	addr := make(chan string, 1)
	var mu sync.Mutex
	var log strings.Builder // what serve logged, shown if the test fails
	t.Cleanup(func() {
		cancel()
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("serve's log:\n%s", log.String())
		}
	})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			log.Write(sc.Bytes())
			log.WriteByte('\n')
			mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("serve stopped at start-up: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("serve did not start within 20s")
	}
	return "", nil
}

func TestServeAndShutDown(t *testing.T) {
	t.Parallel()
	base, stop := startServe(t, testEnv(t))
	resp, err := http.Post(base+"/?expires_in=1h", "text/plain", strings.NewReader("from the binary"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	url := strings.SplitN(string(body), "\n", 2)[0]
	resp, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "from the binary" {
		t.Errorf("read %q", got)
	}
	if err := stop(); err != nil {
		t.Errorf("run after shutdown: %v, want nil", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

func TestBadConfiguration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PASTEBIN_MAX_PASTE_SIZE": "lots"}, "PASTEBIN_MAX_PASTE_SIZE"},
		{map[string]string{"PASTEBIN_DEFAULT_EXPIRY": "never"}, `"never" is not allowed`},
		{map[string]string{"PASTEBIN_DEFAULT_EXPIRY": "400d"}, "longer than the maximum"},
		{map[string]string{"PASTEBIN_CACHE_TTL": "0"}, "PASTEBIN_CACHE_TTL"},
	} {
		err := run(context.Background(), []string{"pastebin", "serve"}, func(k string) string { return tt.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: got %v, want an error mentioning %q", tt.env, err, tt.want)
		}
	}
	if err := run(context.Background(), []string{"pastebin", "nope"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("an unknown command succeeded")
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PASTEBIN_DATABASE_URL": storetest.NewDatabase(t)}
	var out strings.Builder
	if err := run(context.Background(), []string{"pastebin", "migrate", "status"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "applied") || !strings.Contains(out.String(), "00001_init.sql") {
		t.Errorf("migrate status printed:\n%s", out.String())
	}
}

func TestCleanupCommand(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testCleanupCommand)
}

func testCleanupCommand(t *testing.T, kind cachetest.Kind) {
	d := newDeployment(t, storetest.SeedSpec{Pastes: 800, Expired: 500, Shared: 0.4, Tag: "C"})
	d.env["PASTEBIN_CLEANUP_WORKERS"] = "2"
	d.env["PASTEBIN_REDIS_URL"] = cachetest.URL(t, kind)
	getenv := func(k string) string { return d.env[k] }
	ctx := context.Background()

	var out strings.Builder
	if err := run(ctx, []string{"pastebin", "cleanup", "--dry-run"}, getenv, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "expired, not cleaned  500") {
		t.Errorf("dry run printed:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"pastebin", "cleanup"}, getenv, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(cli, finished)", "tombstoned           500", "workers              2", "errors               0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(ctx, []string{"pastebin", "cleanup", "--dry-run", "--json"}, getenv, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"expired":0`) {
		t.Errorf("backlog after the run: %s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"pastebin", "sweep"}, getenv, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"orphans":0`) {
		t.Errorf("sweep printed %s", out.String())
	}
}
