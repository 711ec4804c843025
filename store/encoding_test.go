package store_test

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"strings"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestStoredEncoding: a content row says how its blob is stored, and every way to a paste (the
// upload, the dedup fast path, the upload that lost the race, the read) carries it; a row written
// before the column existed (encoding NULL) reads as the original bytes, its stored size its size.
func TestStoredEncoding(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	h := sha256.Sum256([]byte("compressed bytes"))
	np := store.NewPaste{ContentHash: h[:], Size: 1000, Encoding: "zstd", StoredSize: 120, OwnerTokenHash: store.HashToken("t")}
	want := func(what string, p store.Paste, enc string, stored int64, key string) {
		t.Helper()
		if p.Encoding != enc || p.StoredSize != stored || p.Size != 1000 || p.BlobKey != key {
			t.Errorf("%s: encoding %q, stored %d, size %d, key %s; want %q, %d, 1000, %s",
				what, p.Encoding, p.StoredSize, p.Size, p.BlobKey, enc, stored, key)
		}
	}
	created, err := s.CreatePasteWithBlob(ctx, np, "blobs/zs/1")
	if err != nil {
		t.Fatal(err)
	}
	want("upload", created, "zstd", 120, "blobs/zs/1")
	shared, err := s.CreatePasteShared(ctx, store.NewPaste{ContentHash: h[:], Size: 1000, OwnerTokenHash: store.HashToken("u")})
	if err != nil {
		t.Fatal(err)
	}
	want("dedup fast path", shared, "zstd", 120, "blobs/zs/1")
	// A concurrent creator's upload, stored as it is, loses to the row already there.
	lost := np
	lost.Encoding, lost.StoredSize = "", 1000
	late, err := s.CreatePasteWithBlob(ctx, lost, "blobs/zs/2")
	if err != nil {
		t.Fatal(err)
	}
	want("lost race", late, "zstd", 120, "blobs/zs/1")
	read, err := s.Paste(ctx, created.Code)
	if err != nil {
		t.Fatal(err)
	}
	want("read", read, "zstd", 120, "blobs/zs/1")

	old := sha256.Sum256([]byte("stored before compression"))
	exec(t, s, `INSERT INTO content (content_hash, blob_key, size_bytes, ref_count) VALUES ($1, 'blobs/old/1', 1000, 0)`, old[:])
	p, err := s.CreatePasteShared(ctx, store.NewPaste{ContentHash: old[:], Size: 1000, OwnerTokenHash: store.HashToken("v")})
	if err != nil {
		t.Fatal(err)
	}
	want("old row, dedup", p, "", 1000, "blobs/old/1")
	if p, err = s.Paste(ctx, p.Code); err != nil {
		t.Fatal(err)
	}
	want("old row, read", p, "", 1000, "blobs/old/1")
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM content WHERE stored_bytes IS NULL`); n != 1 {
		t.Errorf("%d rows without a stored size, want the old one", n)
	}
}

// TestEncodingChecks: the database refuses an encoding it does not know and a stored size without
// one, so no version serves bytes it cannot read.
func TestEncodingChecks(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	for _, tc := range []struct{ encoding, stored string }{{"'br'", "10"}, {"NULL", "10"}, {"'zstd'", "NULL"}, {"'zstd'", "0"}} {
		_, err := s.Pool().Exec(context.Background(), `INSERT INTO content (content_hash, blob_key, size_bytes, ref_count, encoding, stored_bytes)
			VALUES (sha256('x'), 'blobs/x', 10, 0, `+tc.encoding+`, `+tc.stored+`)`)
		if err == nil || !strings.Contains(err.Error(), "check constraint") {
			t.Errorf("encoding %s, stored %s: %v, want a check violation", tc.encoding, tc.stored, err)
		}
	}
}
