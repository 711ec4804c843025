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

// TestEntryEncodings: an entry keeps how its content is stored; one written before compression
// (version 2) holds the original bytes and reads so, whatever its header says.
func TestEntryEncodings(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := Paste{Code: "abcdefghijk", ContentHash: []byte{1}, BlobKey: "blobs/x/y", Size: 500, Encoding: "zstd",
		StoredSize: 4, CreatedAt: now, Content: []byte{0x28, 0xb5, 0x2f, 0xfd}}
	raw, err := encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] != 3 {
		t.Fatalf("entry version %d, want 3", raw[0])
	}
	got, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	raw[0] = 2 // as if written before compression, with a header it could not have had
	got, err = decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Encoding != "" || got.StoredSize != got.Size {
		t.Errorf("version 2 entry: encoding %q, stored %d of %d; want the original bytes", got.Encoding, got.StoredSize, got.Size)
	}
	raw[0] = 4
	if _, err := decode(raw); err == nil || errors.Is(err, errOldEntry) {
		t.Errorf("version 4 entry: %v, want an unknown format", err)
	}
}
