package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// httpDo sends a request and returns its status and body.
func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOperatorCommands runs takedown, block and unblock from the command line against a running
// serve: what they take down answers 410 at once (the cache is marked), blocked content is
// refused on create, and each action is in the audit log as the command line's.
func TestOperatorCommands(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["PASTEBIN_BLOCK"] = "true" // operator flags are never read from the environment
	base, stop := startServe(t, env)
	defer stop()
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()

	status, body := httpDo(t, http.MethodPost, base+"/", "reported")
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	code := body[strings.LastIndex(strings.SplitN(body, "\n", 2)[0], "/")+1 : strings.Index(body, "\n")]
	if status, _ := httpDo(t, http.MethodGet, base+"/raw/"+code, ""); status != http.StatusOK {
		t.Fatalf("read: %d", status)
	}
	var out strings.Builder
	if err := run(ctx, []string{"pastebin", "takedown", code, "-reason", "abuse report 7", "-legal"}, getenv, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), code+" taken down") || strings.Contains(out.String(), "blocked: true") {
		t.Errorf("takedown printed %q", out.String())
	}
	if status, _ := httpDo(t, http.MethodGet, base+"/raw/"+code, ""); status != http.StatusUnavailableForLegalReasons {
		t.Errorf("read after a legal takedown: %d, want 451", status)
	}

	hash := sha256.Sum256([]byte("never again"))
	hexHash := hex.EncodeToString(hash[:])
	if err := run(ctx, []string{"pastebin", "block", "-reason", "malware", hexHash}, getenv, io.Discard); err != nil {
		t.Fatal(err)
	}
	if status, _ := httpDo(t, http.MethodPost, base+"/", "never again"); status != http.StatusUnavailableForLegalReasons {
		t.Errorf("create of blocked content: %d, want 451", status)
	}
	out.Reset()
	if err := run(ctx, []string{"pastebin", "unblock", hexHash, "-reason", "appeal", "-json"}, getenv, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"removed":true`) {
		t.Errorf("unblock printed %q", out.String())
	}
	if status, _ := httpDo(t, http.MethodPost, base+"/", "never again"); status != http.StatusCreated {
		t.Errorf("create after unblock: %d", status)
	}

	st, err := store.Open(ctx, env["PASTEBIN_DATABASE_URL"], slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := storetest.Count(t, st.Pool(), `SELECT count(*) FROM admin_audit WHERE via = 'cli' AND actor LIKE 'cli:%@%'`); n != 3 {
		t.Errorf("%d command-line actions in the audit log, want 3", n)
	}
	for _, args := range [][]string{{"takedown", code}, {"block", "-reason", "x"}, {"block", "-reason", "x", "-code", code, hexHash}, {"unblock", "abc"}, {"unblock", hexHash}, {"unblock", hexHash, "-reason", " "}} {
		if err := run(ctx, append([]string{"pastebin"}, args...), getenv, io.Discard); err == nil {
			t.Errorf("pastebin %v succeeded", args)
		}
	}
}

// TestTakedownUnconfirmed: a takedown from the command line while Redis cannot be told commits,
// but fails and says so, as the API answers 503: another replica may still serve its cached copy.
// Run again once Redis answers, it marks the paste gone in the cache (invariant 5).
func TestTakedownUnconfirmed(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, storetest.SeedSpec{Pastes: 1, Tag: "U"})
	code := "U0000000001"
	ctx := context.Background()
	c, err := cache.OpenURL(d.env["PASTEBIN_REDIS_URL"], cache.ClientOptions{}, d.env["PASTEBIN_REDIS_PREFIX"], slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Now()
	p, err := d.store.Paste(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	// Another replica read the paste and cached it.
	c.Put(ctx, c.Get(ctx, code, now), cache.Paste{Code: code, ContentHash: p.ContentHash, BlobKey: p.BlobKey, Size: p.Size,
		CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt}, time.Hour, now)
	if l := c.Get(ctx, code, now); l.Result != cache.Hit {
		t.Fatalf("the other replica's entry: got %v, want a hit", l.Result)
	}

	args := []string{"pastebin", "takedown", code, "-reason", "abuse report 8"}
	cut := maps.Clone(d.env)
	cut["PASTEBIN_REDIS_URL"] = cachetest.RefusedURL(t)
	err = run(ctx, args, func(k string) string { return cut[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "again") {
		t.Errorf("takedown while Redis cannot be told: got %v, want a failure that says to run it again", err)
	}
	if _, err := d.store.Paste(ctx, code); !errors.Is(err, store.ErrGone) {
		t.Fatalf("after the unconfirmed takedown: %v, want the paste gone in the database", err)
	}
	if l := c.Get(ctx, code, time.Now()); l.Result != cache.Hit {
		t.Fatalf("the cache was told after all (%v): the test no longer cuts Redis off", l.Result)
	}

	if err := run(ctx, args, func(k string) string { return d.env[k] }, io.Discard); err != nil {
		t.Fatalf("the same takedown again, Redis back: %v", err)
	}
	if l := c.Get(ctx, code, time.Now()); l.Result != cache.Gone || l.Reason != store.ReasonTakedown {
		t.Errorf("after the retry the cache answers %v (%q), want gone (%q): a replica serves a taken-down paste", l.Result, l.Reason, store.ReasonTakedown)
	}
}
