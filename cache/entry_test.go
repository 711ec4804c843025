package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEntryRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, p := range []Paste{
		{Code: "abcdefghijk", ContentHash: []byte{1, 2, 3}, BlobKey: "blobs/x/y", Size: 5, CreatedAt: now,
			ExpiresAt: now.Add(time.Hour), Content: []byte("hello"), Title: "t", Language: "go", Filename: "f.go"},
		{Code: "abcdefghijk", Size: 1 << 20, CreatedAt: now}, // metadata only
		{Code: "abcdefghijk", Size: 3, CreatedAt: now, Content: []byte{1, 2, 3}, Encryption: "v1; kdf=none"},
	} {
		raw, err := encode(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0}, {1, 0, 0, 0, 9, '{'}, {1, 0, 0, 0, 1, '['}} {
		if _, err := decode(bad); err == nil {
			t.Errorf("decode(%v) succeeded", bad)
		}
	}
}

// TestEntryEncodings: an entry keeps how its content is stored. One written before compression
// (version 2) or before encrypted pastes (version 3) is a miss: it may be an encrypted paste's,
// without the format its readers need.
func TestEntryEncodings(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := Paste{Code: "abcdefghijk", ContentHash: []byte{1}, BlobKey: "blobs/x/y", Size: 500, Encoding: "zstd",
		StoredSize: 4, CreatedAt: now, Content: []byte{0x28, 0xb5, 0x2f, 0xfd}}
	raw, err := encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] != 4 {
		t.Fatalf("entry version %d, want 4", raw[0])
	}
	got, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for _, old := range []byte{2, 3} {
		raw[0] = old
		if _, err := decode(raw); !errors.Is(err, errOldEntry) {
			t.Errorf("version %d entry: %v, want errOldEntry", old, err)
		}
	}
	raw[0] = 5
	if _, err := decode(raw); err == nil || errors.Is(err, errOldEntry) {
		t.Errorf("version 5 entry: %v, want an unknown format", err)
	}
}
