package cache

import (
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
	// An entry from before encrypted pastes may be one of them, without its format: a miss.
	if _, err := decode([]byte("\x02\x00\x00\x00\x02{}")); err != errOldEntry {
		t.Errorf("decode of a version 2 entry: %v, want errOldEntry", err)
	}
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0}, {1, 0, 0, 0, 9, '{'}, {1, 0, 0, 0, 1, '['}} {
		if _, err := decode(bad); err == nil {
			t.Errorf("decode(%v) succeeded", bad)
		}
	}
}
