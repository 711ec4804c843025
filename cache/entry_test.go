package cache

import (
	"encoding/binary"
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
		{Code: "abcdefghijk", ContentHash: make([]byte, 32), BlobKey: "blobs/x/z", Size: 1 << 40, Encoding: "zstd",
			StoredSize: 1 << 39, Title: "ünïcode", CreatedAt: time.Unix(0, 0).UTC(), ExpiresAt: now.Add(time.Nanosecond),
			Server: "0123456789abcdef0123456789abcdef01234567"},
		{}, // nothing set
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
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0}, {1, 0, 0, 0, 9, '{'}, {1, 0, 0, 0, 1, '['}, {5, 0, 0, 0, 0}} {
		if _, err := decode(bad); err == nil {
			t.Errorf("decode(%v) succeeded", bad)
		}
	}
}

// TestEntryHeaderCut: a header cut anywhere, or with bytes past its last field, is refused, never
// read past its end.
func TestEntryHeaderCut(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	raw, err := encode(Paste{Code: "abcdefghijk", ContentHash: []byte{1, 2}, BlobKey: "blobs/x/y", Size: 300,
		Title: "title", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Server: "srv"})
	if err != nil {
		t.Fatal(err)
	}
	header := raw[5:]
	for n := range len(header) {
		cut := binary.BigEndian.AppendUint32([]byte{entryVersion}, uint32(n))
		if _, err := decode(append(cut, header[:n]...)); err == nil {
			t.Errorf("header cut to %d of %d bytes: decoded", n, len(header))
		}
	}
	long := binary.BigEndian.AppendUint32([]byte{entryVersion}, uint32(len(header)+1))
	if _, err := decode(append(append(long, header...), 0)); err == nil {
		t.Error("header with a byte past its last field: decoded")
	}
}

// TestEntryEncodings: an entry keeps how its content is stored. One written before compression
// (version 2) or before encrypted pastes (version 3) is a miss: it may be an encrypted paste's,
// without the format its readers need; so is one with a JSON header (version 4).
func TestEntryEncodings(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := Paste{Code: "abcdefghijk", ContentHash: []byte{1}, BlobKey: "blobs/x/y", Size: 500, Encoding: "zstd",
		StoredSize: 4, CreatedAt: now, Content: []byte{0x28, 0xb5, 0x2f, 0xfd}}
	raw, err := encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] != 5 {
		t.Fatalf("entry version %d, want 5", raw[0])
	}
	got, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for _, old := range []byte{2, 3, 4} {
		raw[0] = old
		if _, err := decode(raw); !errors.Is(err, errOldEntry) {
			t.Errorf("version %d entry: %v, want errOldEntry", old, err)
		}
	}
	raw[0] = 6
	if _, err := decode(raw); err == nil || errors.Is(err, errOldEntry) {
		t.Errorf("version 6 entry: %v, want an unknown format", err)
	}
}
