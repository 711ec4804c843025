package api_test

import (
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"pastebin/api"
)

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "3f0c5a8e-1d4b-4f7e-9a2b-6c8d0e1f2a3b"
	post := func(content, k string) response {
		return e.do(e.request(http.MethodPost, "/?expires_in=1h", strings.NewReader(content), "Idempotency-Key", k))
	}
	first := post("retried upload", key)
	again := post("retried upload", key)
	if first.StatusCode != http.StatusCreated || again.StatusCode != http.StatusCreated {
		t.Fatalf("statuses %d and %d, want 201 twice", first.StatusCode, again.StatusCode)
	}
	if first.text() != again.text() {
		t.Errorf("the retry answered %q, the first %q: want the same paste and token", again.text(), first.text())
	}
	if again.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("Idempotent-Replayed: first %q, retry %q", first.Header.Get("Idempotent-Replayed"), again.Header.Get("Idempotent-Replayed"))
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 1 {
		t.Errorf("pastes %d, want 1", n)
	}
	if got := e.refCount("retried upload"); got != 1 {
		t.Errorf("ref_count %d, want 1", got)
	}
	// The replayed token is the real one.
	lines := strings.Split(strings.TrimSpace(again.text()), "\n")
	if r := e.delete(lines[0][strings.LastIndex(lines[0], "/")+1:], lines[1]); r.StatusCode != http.StatusNoContent {
		t.Errorf("delete with the replayed token: %d", r.StatusCode)
	}
	if r := post("another upload", key); r.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("same key, different content: %d, want 422", r.StatusCode)
	}
	if r := post("retried upload", key); r.StatusCode != http.StatusGone {
		t.Errorf("retry after the paste was deleted: %d, want 410", r.StatusCode)
	}
}

func TestIdempotencyKeyConcurrentRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "concurrent-retries-of-one-upload"
	answers := make([]string, 12)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			r := e.do(e.request(http.MethodPost, "/", strings.NewReader("raced"), "Idempotency-Key", key))
			if r.StatusCode != http.StatusCreated {
				t.Errorf("retry %d: %d %s", i, r.StatusCode, r.body)
			}
			answers[i] = r.text()
		})
	}
	wg.Wait()
	for _, a := range answers[1:] {
		if a != answers[0] {
			t.Fatalf("answers differ: %q and %q", answers[0], a)
		}
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 1 {
		t.Errorf("pastes %d, want 1", n)
	}
	if got := e.refCount("raced"); got != 1 {
		t.Errorf("ref_count %d, want 1", got)
	}
}

// TestIdempotencyKeyBoundToClient: a key answers its first create again only to the client that sent
// it. Another client with the same key and the same bytes gets a paste of its own, with its own code
// and token, never the first creator's.
func TestIdempotencyKeyBoundToClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} }))
	const key = "9b2f6c1e-4f0a-4c39-8d0e-0c5a7e1b2d3f"
	post := func(client, content string) response {
		return e.do(e.request(http.MethodPost, "/?expires_in=1h", strings.NewReader(content),
			"Idempotency-Key", key, "X-Forwarded-For", client))
	}
	first := post("198.51.100.1", "the same bytes")
	other := post("203.0.113.7", "the same bytes")
	if first.StatusCode != http.StatusCreated || other.StatusCode != http.StatusCreated {
		t.Fatalf("statuses %d and %d, want 201 twice: %s", first.StatusCode, other.StatusCode, other.body)
	}
	if first.text() == other.text() || first.Header.Get("Paste-Delete-Token") == other.Header.Get("Paste-Delete-Token") {
		t.Errorf("another client with the same key was answered the first paste: %q", other.text())
	}
	if other.Header.Get("Idempotent-Replayed") != "" {
		t.Error("another client's create is marked as replayed")
	}
	if r := post("198.51.100.1", "the same bytes"); r.text() != first.text() || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the first client's retry answered %q, want its own paste again", r.text())
	}
	if r := post("203.0.113.7", "the same bytes"); r.text() != other.text() {
		t.Errorf("the second client's retry answered %q, want its own paste again", r.text())
	}
	if r := post("192.0.2.9", "other bytes"); r.StatusCode != http.StatusCreated {
		t.Errorf("a third client's key of the same text on other bytes: %d, want 201 (its own key)", r.StatusCode)
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 3 {
		t.Errorf("pastes %d, want 3", n)
	}
	if got := e.refCount("the same bytes"); got != 2 {
		t.Errorf("ref_count %d, want 2", got)
	}
}
