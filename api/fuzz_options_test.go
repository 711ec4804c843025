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
	"time"

	"pastebin/store"
)

// Fuzz targets for the small values a request carries besides its content: lifetimes, bearer
// tokens and Idempotency-Keys.

// FuzzParseLifetime reads lifetimes as the expiry settings do, and writes them back.
func FuzzParseLifetime(f *testing.F) {
	for _, v := range []string{"1h", "30d", "1w", "3600", "never", "1h30m", "90min", " 2H "} {
		f.Add(v, int64(0))
	}
	f.Add("", int64(time.Hour))
	f.Add("", int64(1500*time.Millisecond))
	f.Fuzz(func(t *testing.T, v string, n int64) {
		if d, err := ParseLifetime(v); err == nil {
			checkLifetime(t, v, d)
		}
		// Every lifetime a setting can hold prints as text that reads back as itself, so the flag
		// defaults shown by -help can be pasted back.
		if d := time.Duration(n); d >= 0 && d <= maxLifetime {
			if got, err := ParseLifetime(FormatLifetime(d)); err != nil || got != d {
				t.Errorf("ParseLifetime(FormatLifetime(%d)) = ParseLifetime(%q) = %v, %v", n, FormatLifetime(d), got, err)
			}
		}
	})
}

// checkLifetime checks a lifetime ParseLifetime accepted from v.
func checkLifetime(t *testing.T, v string, d time.Duration) {
	t.Helper()
	never := strings.ToLower(strings.TrimSpace(v)) == "never"
	if d < 0 || d > maxLifetime || (d == 0) != never {
		t.Errorf("ParseLifetime(%q) = %v, want never, or a positive lifetime up to %v", v, d, maxLifetime)
	}
	if got, err := ParseLifetime(FormatLifetime(d)); err != nil || got != d {
		t.Errorf("ParseLifetime(%q) = %v, which writes as %q and reads back as %v, %v", v, d, FormatLifetime(d), got, err)
	}
	// expires_in and the settings share one grammar: a policy that allows everything agrees.
	all := ExpiryPolicy{Default: time.Hour, Max: maxLifetime, AllowNever: true}
	if got, err := all.parseExpiresIn(v); d >= time.Second && (err != nil || got != d) {
		t.Errorf("ParseLifetime(%q) = %v, but expires_in reads it as %v, %v", v, d, got, err)
	}
}

// FuzzParseExpiresIn reads expires_in under a policy: the default, the maximum, and whether
// "never" is allowed.
func FuzzParseExpiresIn(f *testing.F) {
	day := int64(24 * time.Hour)
	f.Add("1h", 7*day, 30*day, false)
	f.Add("never", int64(0), 365*day, true)
	f.Add("", int64(0), 365*day, true)
	f.Add("31d", 7*day, 30*day, false)
	f.Fuzz(func(t *testing.T, v string, def, max int64, allowNever bool) {
		p := ExpiryPolicy{Default: time.Duration(def), Max: time.Duration(max), AllowNever: allowNever}
		if p.Validate() != nil {
			p = ExpiryPolicy{Default: 24 * time.Hour, Max: 30 * 24 * time.Hour} // the server refuses to start with it
		}
		d, err := p.parseExpiresIn(v)
		if err == nil && (d == 0 && !p.AllowNever || d != 0 && (d < time.Second || d > p.Max)) {
			t.Errorf("parseExpiresIn(%q) = %v, which policy %+v does not allow", v, d, p) // the default too
		}
		v = strings.ToLower(strings.TrimSpace(v))
		lifetime, lerr := ParseLifetime(v)
		inPolicy := lerr == nil && lifetime >= time.Second && lifetime <= p.Max || v == "never" && p.AllowNever
		switch {
		case v == "":
			if err != nil || d != p.Default {
				t.Errorf("empty expires_in = %v, %v; want the default %v", d, err, p.Default)
			}
		case err != nil:
			if !errors.Is(err, errBadExpiry) {
				t.Errorf("parseExpiresIn(%q) failed with %v, want an invalid-expiry problem", v, err)
			}
			if inPolicy {
				t.Errorf("parseExpiresIn(%q) refused %v, which policy %+v allows: %v", v, lifetime, p, err)
			}
		case !inPolicy || d != lifetime:
			t.Errorf("parseExpiresIn(%q) = %v under %+v; ParseLifetime says %v, %v", v, d, p, lifetime, lerr)
		}
	})
}

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
		if !ok || len(token) != tokenLength || !bytes.Equal(store.HashToken(token), store.HashToken(issued)) {
			t.Errorf("Authorization: %q read as %q, %v; want the issued token of %d characters", h, token, ok, tokenLength)
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

// FuzzIdempotencyKey reads Idempotency-Key headers, and seals and opens delete tokens under them.
func FuzzIdempotencyKey(f *testing.F) {
	f.Add("3f0c5a8e-1d4b-4f7e-9a2b-6c8d0e1f2a3b", "token", []byte{})
	f.Add("short", "token", []byte("sealed"))
	f.Add("concurrent-retries-of-one-upload", "", []byte{})
	f.Fuzz(func(t *testing.T, header, token string, sealed []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Idempotency-Key", header)
		k, err := readIdempotencyKey(r)
		switch {
		case err != nil:
			checkClientError(t, err)
			if !errors.Is(err, errBadIdempotency) || header == "" || wellFormedKey(header) {
				t.Errorf("Idempotency-Key %q refused with %v", header, err)
			}
			return
		case k.key != header || header != "" && !wellFormedKey(header):
			t.Fatalf("Idempotency-Key %q read as %q, want it refused or kept as sent", header, k.key)
		case k.none():
			return
		}
		checkSealed(t, k, token, sealed)
		checkFingerprint(t, header, token)
	})
}

// wellFormedKey is the documented shape of an Idempotency-Key: 16 to 255 printable ASCII
// characters without spaces.
func wellFormedKey(k string) bool {
	return len(k) >= 16 && len(k) <= 255 && !strings.ContainsFunc(k, func(r rune) bool { return r < 0x21 || r > 0x7e })
}

// checkSealed checks that a delete token sealed under k opens under k alone (not under another key,
// nor under the same key from another client), and that no other bytes open at all: a replay hands
// back exactly the token it stored, or fails.
func checkSealed(t *testing.T, k idempotencyKey, token string, sealed []byte) {
	t.Helper()
	s, err := k.seal(token)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.open(s); err != nil || got != token {
		t.Errorf("open(seal(%q)) = %q, %v", token, got, err)
	}
	if _, err := (idempotencyKey{key: k.key + "x", client: k.client}).open(s); err == nil {
		t.Errorf("a token sealed under %q opened under another key", k.key)
	}
	other := idempotencyKey{key: k.key, client: k.client + "1"}
	if _, err := other.open(s); err == nil || bytes.Equal(other.lookupHash(), k.lookupHash()) {
		t.Errorf("the key %q of another client finds or opens the first client's token", k.key)
	}
	s[len(s)-1] ^= 1
	if _, err := k.open(s); err == nil {
		t.Error("a tampered sealed token opened")
	}
	if got, err := k.open(sealed); err == nil {
		t.Errorf("fuzzed bytes %x opened as %q", sealed, got)
	}
	if bytes.Equal(k.lookupHash(), k.derive("seal")) || !bytes.Equal(k.lookupHash(), k.lookupHash()) {
		t.Error("the lookup hash is not a stable hash apart from the sealing key")
	}
}

// checkFingerprint checks that options are length-prefixed in the fingerprint: moving a byte from
// the title to the language is another request, which must not replay the first one's paste.
func checkFingerprint(t *testing.T, a, b string) {
	t.Helper()
	if b == "" {
		return
	}
	one := createInput{hash: make([]byte, 32), title: a, language: b}
	two := createInput{hash: make([]byte, 32), title: a + b[:1], language: b[1:]}
	if sameFingerprint(fingerprint(one, time.Hour), fingerprint(two, time.Hour)) {
		t.Errorf("title %q language %q has the fingerprint of title %q language %q", one.title, one.language, two.title, two.language)
	}
}
