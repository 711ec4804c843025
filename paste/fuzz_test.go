package paste

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for the small values a create carries besides its content: lifetimes and
// Idempotency-Keys.

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
		if d := time.Duration(n); d >= 0 && d <= MaxLifetime {
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
	if d < 0 || d > MaxLifetime || (d == 0) != never {
		t.Errorf("ParseLifetime(%q) = %v, want never, or a positive lifetime up to %v", v, d, MaxLifetime)
	}
	if got, err := ParseLifetime(FormatLifetime(d)); err != nil || got != d {
		t.Errorf("ParseLifetime(%q) = %v, which writes as %q and reads back as %v, %v", v, d, FormatLifetime(d), got, err)
	}
	// expires_in and the settings share one grammar: a policy that allows everything agrees.
	all := ExpiryPolicy{Default: time.Hour, Max: MaxLifetime, AllowNever: true}
	if got, err := all.Lifetime(v); d >= time.Second && (err != nil || got != d) {
		t.Errorf("ParseLifetime(%q) = %v, but expires_in reads it as %v, %v", v, d, got, err)
	}
}

// FuzzLifetime reads expires_in under a policy: the default, the maximum, and whether "never" is
// allowed.
func FuzzLifetime(f *testing.F) {
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
		d, err := p.Lifetime(v)
		if err == nil && (d == 0 && !p.AllowNever || d != 0 && (d < time.Second || d > p.Max)) {
			t.Errorf("Lifetime(%q) = %v, which policy %+v does not allow", v, d, p) // the default too
		}
		v = strings.ToLower(strings.TrimSpace(v))
		lifetime, lerr := ParseLifetime(v)
		inPolicy := lerr == nil && lifetime >= time.Second && lifetime <= p.Max || v == "never" && p.AllowNever
		var bad *ExpiryError
		switch {
		case v == "":
			if err != nil || d != p.Default {
				t.Errorf("empty expires_in = %v, %v; want the default %v", d, err, p.Default)
			}
		case err != nil:
			if !errors.As(err, &bad) {
				t.Errorf("Lifetime(%q) failed with %v, want an *ExpiryError", v, err)
			}
			if inPolicy {
				t.Errorf("Lifetime(%q) refused %v, which policy %+v allows: %v", v, lifetime, p, err)
			}
		case !inPolicy || d != lifetime:
			t.Errorf("Lifetime(%q) = %v under %+v; ParseLifetime says %v, %v", v, d, p, lifetime, lerr)
		}
	})
}

// FuzzIdempotencyKey seals and opens delete tokens under Idempotency-Keys.
func FuzzIdempotencyKey(f *testing.F) {
	f.Add("3f0c5a8e-1d4b-4f7e-9a2b-6c8d0e1f2a3b", "token", []byte{})
	f.Add("short", "token", []byte("sealed"))
	f.Add("concurrent-retries-of-one-upload", "", []byte{})
	f.Fuzz(func(t *testing.T, key, token string, sealed []byte) {
		if key == "" {
			return // no key: nothing is sealed
		}
		k := IdempotencyKey{Key: key, Client: "192.0.2.1"}
		checkSealed(t, k, token, sealed)
		checkFingerprint(t, key, token)
	})
}

// checkSealed checks that a delete token sealed under k opens under k alone (not under another key,
// nor under the same key from another client), and that no other bytes open at all: a replay hands
// back exactly the token it stored, or fails.
func checkSealed(t *testing.T, k IdempotencyKey, token string, sealed []byte) {
	t.Helper()
	s, err := k.seal(token)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.open(s); err != nil || got != token {
		t.Errorf("open(seal(%q)) = %q, %v", token, got, err)
	}
	if _, err := (IdempotencyKey{Key: k.Key + "x", Client: k.Client}).open(s); err == nil {
		t.Errorf("a token sealed under %q opened under another key", k.Key)
	}
	other := IdempotencyKey{Key: k.Key, Client: k.Client + "1"}
	if _, err := other.open(s); err == nil || bytes.Equal(other.lookupHash(), k.lookupHash()) {
		t.Errorf("the key %q of another client finds or opens the first client's token", k.Key)
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
	one := Input{Hash: make([]byte, 32), Title: a, Language: b}
	two := Input{Hash: make([]byte, 32), Title: a + b[:1], Language: b[1:]}
	if sameFingerprint(fingerprint(one, time.Hour), fingerprint(two, time.Hour)) {
		t.Errorf("title %q language %q has the fingerprint of title %q language %q", one.Title, one.Language, two.Title, two.Language)
	}
}
