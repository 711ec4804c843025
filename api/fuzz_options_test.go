package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/paste"
	"pastebin/store"
)

// Fuzz targets for the small values a request carries besides its content: bearer tokens and
// Idempotency-Keys.

// FuzzBearerToken reads Authorization headers as the delete and admin routes do.
func FuzzBearerToken(f *testing.F) {
	f.Add("Bearer abc", "abc")
	f.Add("bearer   spaced  ", "spaced")
	f.Add("Basic dXNlcjpwYXNz", "admin-token")
	f.Add("Bearer", "")
	f.Fuzz(func(t *testing.T, header, admin string) {
		r := httptest.NewRequest(http.MethodDelete, "/api/v1/pastes/abc", nil)
		r.Header.Set("Authorization", header)
		token, ok := bearerToken(r)
		if ok && (token == "" || token != strings.TrimSpace(token) || !strings.EqualFold(header[:7], "Bearer ") ||
			!strings.Contains(header[7:], token)) {
			t.Errorf("bearerToken(%q) = %q, want the trimmed rest of a Bearer header", header, token)
		}
		checkIssuedToken(t, admin)
		checkRequireAdmin(t, header, admin, ok && token == admin)
	})
}

// checkIssuedToken checks that a delete token of the shape newToken draws, derived here from seed,
// comes back from the header as issued, however the client spells the scheme and spaces.
func checkIssuedToken(t *testing.T, seed string) {
	t.Helper()
	sum := sha256.Sum256([]byte(seed))
	issued := base64.RawURLEncoding.EncodeToString(sum[:])
	for _, h := range []string{"Bearer " + issued, "bearer " + issued, "BEARER  " + issued + " "} {
		r := httptest.NewRequest(http.MethodDelete, "/api/v1/pastes/abc", nil)
		r.Header.Set("Authorization", h)
		token, ok := bearerToken(r)
		if !ok || len(token) != paste.TokenLength || !bytes.Equal(store.HashToken(token), store.HashToken(issued)) {
			t.Errorf("Authorization: %q read as %q, %v; want the issued token of %d characters", h, token, ok, paste.TokenLength)
		}
	}
}

// checkRequireAdmin sends header to the admin routes guarded by the token admin: only that token
// gets through, and without an admin token nothing does.
func checkRequireAdmin(t *testing.T, header, admin string, wantPass bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(admin))
	for _, hash := range [][]byte{sum[:], nil} {
		passed := false
		auth := &adminAuth{tokenHash: hash, logger: slog.New(slog.DiscardHandler)} // no allowance: pure logic
		h := auth.requireAdmin(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }))
		r := httptest.NewRequest(http.MethodPost, "/admin/cleanup", nil)
		r.Header.Set("Authorization", header)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch {
		case hash == nil && (passed || w.Code != http.StatusNotFound):
			t.Errorf("admin API off: %q got through or answered %d, want 404", header, w.Code)
		case hash != nil && passed != wantPass:
			t.Errorf("Authorization: %q with admin token %q: passed %v, want %v", header, admin, passed, wantPass)
		case hash != nil && !passed && (w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == ""):
			t.Errorf("refused %q with %d and WWW-Authenticate %q, want 401 with a challenge", header, w.Code, w.Header().Get("WWW-Authenticate"))
		}
	}
}

// FuzzIdempotencyHeader reads Idempotency-Key headers: a well-formed key is kept as sent, bound to
// the client; anything else is refused as a client's error. Sealing under the key is paste's
// (FuzzIdempotencyKey there).
func FuzzIdempotencyHeader(f *testing.F) {
	f.Add("3f0c5a8e-1d4b-4f7e-9a2b-6c8d0e1f2a3b")
	f.Add("short")
	f.Add("concurrent-retries-of-one-upload")
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("Idempotency-Key", header)
		var k paste.IdempotencyKey
		var err error
		request.IdentifyClients(nil, "")(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			k, err = readIdempotencyKey(r)
		})).ServeHTTP(httptest.NewRecorder(), r)
		switch {
		case err != nil:
			checkClientError(t, err)
			if !errors.Is(err, problem.BadIdempotency) || header == "" || wellFormedKey(header) {
				t.Errorf("Idempotency-Key %q refused with %v", header, err)
			}
		case k.Key != header || header != "" && !wellFormedKey(header):
			t.Errorf("Idempotency-Key %q read as %q, want it refused or kept as sent", header, k.Key)
		case header != "" && k.Client != "192.0.2.1":
			t.Errorf("Idempotency-Key %q bound to client %q, want the request's", header, k.Client)
		}
	})
}

// wellFormedKey is the documented shape of an Idempotency-Key: 16 to 255 printable ASCII
// characters without spaces.
func wellFormedKey(k string) bool {
	return len(k) >= 16 && len(k) <= 255 && !strings.ContainsFunc(k, func(r rune) bool { return r < 0x21 || r > 0x7e })
}
