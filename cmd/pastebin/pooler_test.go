package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pastebin/store/storetest"
)

// behindPooler points env's serve at its database through pgbouncer in transaction mode, with the
// URL as an operator would write it (no pgx setting in it) and the direct URL for migrations.
func behindPooler(t *testing.T, env map[string]string) {
	t.Helper()
	direct := env["PASTEBIN_DATABASE_URL"]
	u, err := url.Parse(storetest.Pooled(t, direct))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	u.RawQuery = q.Encode()
	env["PASTEBIN_DATABASE_URL"] = u.String()
	env["PASTEBIN_DATABASE_POOLER"] = "transaction"
	env["PASTEBIN_MIGRATE_DATABASE_URL"] = direct
}

// TestServeBehindPooler: serve through pgbouncer in transaction mode, its migrations over the direct
// URL: a paste is created, read, deleted and gone, and the operator commands (migrate, cleanup,
// fsck) work the same way.
func TestServeBehindPooler(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	behindPooler(t, env)
	getenv := func(k string) string { return env[k] }
	base, stop := startServe(t, env)
	for i := range 20 { // more than one server connection's worth of statements
		p := createPaste(t, base, "behind the pooler "+strings.Repeat("x", i))
		if got := httpGet(t, base+"/raw/"+p.code); got.status != http.StatusOK || got.body != "behind the pooler "+strings.Repeat("x", i) {
			t.Fatalf("read: %d %q", got.status, got.body)
		}
		req, _ := http.NewRequest(http.MethodDelete, base+"/api/v1/pastes/"+p.code, nil)
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delete: %d", resp.StatusCode)
		}
		if got := httpGet(t, base+"/raw/"+p.code); got.status != http.StatusGone {
			t.Fatalf("read after delete: %d", got.status)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	ctx := context.Background()
	for _, cmd := range [][]string{{"migrate", "status"}, {"cleanup"}, {"fsck"}} {
		if err := run(ctx, append([]string{"pastebin"}, cmd...), getenv, io.Discard); err != nil {
			t.Errorf("pastebin %s behind the pooler: %v", strings.Join(cmd, " "), err)
		}
	}
}

// TestPoolerSettings: behind a transaction pooler, migrations need their direct URL, and a pgx mode
// that keeps prepared statements on a server connection is refused.
func TestPoolerSettings(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	behindPooler(t, env)
	noMigrateURL := func(k string) string {
		if k == "PASTEBIN_MIGRATE_DATABASE_URL" {
			return ""
		}
		return env[k]
	}
	ctx := context.Background()
	for _, cmd := range []string{"serve", "migrate"} {
		err := run(ctx, []string{"pastebin", cmd}, noMigrateURL, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "PASTEBIN_MIGRATE_DATABASE_URL") {
			t.Errorf("%s behind the pooler without a migration URL: %v, want an error naming PASTEBIN_MIGRATE_DATABASE_URL", cmd, err)
		}
	}
	cached := func(k string) string {
		if k == "PASTEBIN_DATABASE_URL" {
			return env[k] + "&default_query_exec_mode=cache_statement"
		}
		return env[k]
	}
	if err := run(ctx, []string{"pastebin", "fsck"}, cached, io.Discard); err == nil || !strings.Contains(err.Error(), "cache statement") {
		t.Errorf("fsck behind the pooler with prepared statements cached: %v, want it refused", err)
	}
	wrong := func(k string) string {
		if k == "PASTEBIN_DATABASE_POOLER" {
			return "statement"
		}
		return env[k]
	}
	if err := run(ctx, []string{"pastebin", "fsck"}, wrong, io.Discard); err == nil || !strings.Contains(err.Error(), "statement") {
		t.Errorf("an unknown pooler mode: %v, want it refused", err)
	}
}
