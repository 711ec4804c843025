package envelope

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fastFormat keeps the tests quick where the iteration count is not what they test; the count is
// never below MinIterations in a format that parses.
var fastFormat = Format{KDF: KDFPBKDF2, Iterations: 1000}

func TestRoundTrip(t *testing.T) {
	p := Paste{Title: "Ünïcode", Filename: "a b.go", Language: "go", Text: []byte("package main\n\x00\xff")}
	for _, tc := range []struct {
		f        Format
		password string
	}{{Format{KDF: KDFNone}, ""}, {fastFormat, "pâssword"}} {
		key := bytes.Repeat([]byte{7}, KeySize)
		body, err := seal(p, tc.f, key, tc.password)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Open(body, tc.f, key, tc.password)
		if err != nil {
			t.Fatalf("%s: %v", tc.f, err)
		}
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", tc.f, diff)
		}
		if bytes.Contains(body, p.Text[:7]) || bytes.Contains(body, []byte("Ünïcode")) {
			t.Errorf("%s: the body holds the text or the title in clear", tc.f)
		}
	}
}

// TestSealDefaults: Seal draws a new key and nonce each time, and a password means PBKDF2 at the
// default count.
func TestSealDefaults(t *testing.T) {
	p := Paste{Text: []byte("same text")}
	b1, f1, k1, err := Seal(p, "")
	if err != nil {
		t.Fatal(err)
	}
	b2, _, k2, _ := Seal(p, "")
	if bytes.Equal(b1, b2) || bytes.Equal(k1, k2) || f1.String() != "v1; kdf=none" {
		t.Errorf("two seals of one text: equal bodies %v, equal keys %v, format %q", bytes.Equal(b1, b2), bytes.Equal(k1, k2), f1)
	}
	body, f, key, err := Seal(p, "pw")
	if err != nil || f.String() != "v1; kdf=pbkdf2-sha256; iter=600000" {
		t.Fatalf("with a password: %q, %v", f, err)
	}
	if got, err := Open(body, f, key, "pw"); err != nil || string(got.Text) != "same text" {
		t.Errorf("open: %q, %v", got.Text, err)
	}
}

// TestOpenRefuses: a wrong key, a wrong or missing password, a changed byte and a changed format
// all fail, the first three and the format as ErrWrongKey.
func TestOpenRefuses(t *testing.T) {
	key := bytes.Repeat([]byte{1}, KeySize)
	body, err := seal(Paste{Text: []byte("secret")}, fastFormat, key, "right")
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{2}, KeySize)
	flipped := bytes.Clone(body)
	flipped[len(flipped)-20] ^= 1
	changed := Format{KDF: KDFPBKDF2, Iterations: 1001}
	for name, open := range map[string]func() error{
		"wrong key":      func() error { _, err := Open(body, fastFormat, other, "right"); return err },
		"wrong password": func() error { _, err := Open(body, fastFormat, key, "wrong"); return err },
		"changed byte":   func() error { _, err := Open(flipped, fastFormat, key, "right"); return err },
		"changed format": func() error { _, err := Open(body, changed, key, "right"); return err },
		"no password":    func() error { _, err := Open(body, fastFormat, key, ""); return err },
		"format dropped": func() error { _, err := Open(body, Format{KDF: KDFNone}, key, ""); return err },
		"short key":      func() error { _, err := Open(body, fastFormat, key[:16], "right"); return err },
		"truncated body": func() error { _, err := Open(body[:fastFormat.MinBodySize()-1], fastFormat, key, "right"); return err },
		"another version": func() error {
			b := bytes.Clone(body)
			b[0] = 2
			_, err := Open(b, fastFormat, key, "right")
			return err
		},
	} {
		err := open()
		if err == nil {
			t.Errorf("%s: opened", name)
		}
		if strings.HasPrefix(name, "wrong") || strings.HasPrefix(name, "changed") || name == "format dropped" {
			if !errors.Is(err, ErrWrongKey) {
				t.Errorf("%s: %v, want ErrWrongKey", name, err)
			}
		}
	}
}

// TestVectors opens envelopes that Python's cryptography package sealed (testdata/vectors.py),
// so the format is what docs/encryption.md says and not merely what this package does.
func TestVectors(t *testing.T) {
	for _, v := range readVectors(t) {
		f, err := ParseFormat(v.Format)
		if err != nil {
			t.Fatalf("%q: %v", v.Format, err)
		}
		key, err := DecodeKey(v.Key)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := hex.DecodeString(v.BodyHex)
		got, err := Open(body, f, key, v.Password)
		if err != nil {
			t.Fatalf("%q: %v", v.Format, err)
		}
		want := Paste{Title: v.Title, Filename: v.Filename, Language: v.Language, Text: []byte(v.Text)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", v.Format, diff)
		}
	}
}

type vector struct {
	Format, Key, Password, Title, Filename, Language, Text string
	BodyHex                                                string `json:"body_hex"`
}

func readVectors(t *testing.T) []vector {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Vectors []vector }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Vectors
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]string{
		"v1; kdf=none":                           "v1; kdf=none",
		"v1;kdf=none":                            "v1; kdf=none",
		" v1 ;\tkdf=pbkdf2-sha256 ; iter=600000": "v1; kdf=pbkdf2-sha256; iter=600000",
		"v1; iter=10000000; kdf=pbkdf2-sha256":   "v1; kdf=pbkdf2-sha256; iter=10000000",
	} {
		f, err := ParseFormat(in)
		if err != nil || f.String() != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, f, err, want)
		}
	}
	for _, in := range []string{
		"", "v1", "v2; kdf=none", "V1; kdf=none", "v1; kdf=None", "v1; kdf=none; iter=600000",
		"v1; kdf=pbkdf2-sha256", "v1; kdf=pbkdf2-sha256; iter=599999", "v1; kdf=pbkdf2-sha256; iter=10000001",
		"v1; kdf=pbkdf2-sha256; iter=0600000", "v1; kdf=pbkdf2-sha256; iter=+600000", "v1; kdf=pbkdf2-sha256; iter=6e5",
		"v1; kdf=none; kdf=none", "v1; kdf=", "v1; kdf", "v1;", "v1; kdf=none;", "v1; salt=x; kdf=none",
		"v1; kdf=pbkdf2-sha256; iter=600000" + strings.Repeat(" ", 70),
	} {
		if f, err := ParseFormat(in); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseFormat(%q) = %q, %v; want ErrFormat", in, f, err)
		}
	}
}

func TestCheckShape(t *testing.T) {
	f := Format{KDF: KDFNone}
	ok := append([]byte{versionByte}, make([]byte, f.MinBodySize()-1)...)
	if err := f.CheckShape(ok); err != nil {
		t.Errorf("shortest body: %v", err)
	}
	if err := f.CheckShape(ok[:len(ok)-1]); err == nil {
		t.Error("a body one byte short passed")
	}
	if err := fastFormat.CheckShape(ok); err == nil {
		t.Error("a body without room for the salt passed")
	}
	ok[0] = 'v'
	if err := f.CheckShape(ok); err == nil {
		t.Error("a body without the version byte passed")
	}
}

func FuzzOpen(f *testing.F) {
	key := bytes.Repeat([]byte{3}, KeySize)
	body, _ := seal(Paste{Title: "t", Text: []byte("x")}, Format{KDF: KDFNone}, key, "")
	f.Add(body)
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = Open(body, Format{KDF: KDFNone}, key, "") // never panics, whatever the body
	})
}

func FuzzUnpack(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, '{', '}', 'x'})
	f.Fuzz(func(t *testing.T, plain []byte) {
		if len(plain) < metaLengthSize {
			return // Open's shape check keeps shorter plaintexts from unpack
		}
		_, _ = unpack(plain)
	})
}
