package paste

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/blob/blobtest"
	"pastebin/blob/codec"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// TestBodyOnlyForGets: Body and Stored, which every read but the consuming POST reads through,
// refuse a paste with a view limit (burn after reading is one view) whoever calls them, with the
// paste its answer is worded by, and take nothing: the POST still gets the bytes and the view.
func TestBodyOnlyForGets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	s, b := storetest.New(t, logger), blobtest.New(t)
	c, _ := cachetest.New(t, logger)
	cd := codec.New()
	creator := NewCreator(s, b, cd, CreateConfig{Expiry: ExpiryPolicy{Default: time.Hour}, DedupTiming: DedupOff}, time.Now, logger)
	rd := NewReader(s, b, c, cd, ReadConfig{CacheTTL: time.Hour, CacheMaxBytes: 1 << 10}, time.Now, prometheus.NewRegistry())
	consumer := NewConsumer(rd, NewRemover(s, c, nil, logger))
	for _, tt := range []struct {
		name     string
		in       Input
		maxViews int // 0: any GET reads it
	}{
		{"no limit", Input{}, 0},
		{"burn", Input{Burn: true}, 1},
		{"three views", Input{MaxViews: 3}, 3},
	} {
		content := []byte("paste of " + tt.name)
		hash := sha256.Sum256(content)
		tt.in.Content, tt.in.Hash = content, hash[:]
		if err := tt.in.Tidy(); err != nil { // as every caller checks it (Input)
			t.Fatal(err)
		}
		made, err := creator.Create(ctx, tt.in, IdempotencyKey{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := rd.Find(ctx, made.Paste.Code)
		if err != nil {
			t.Fatal(err)
		}
		body, err := rd.Body(ctx, f)
		if OpenToGet(f.Paste) != (tt.maxViews == 0) {
			t.Errorf("%s: OpenToGet %v", tt.name, OpenToGet(f.Paste))
		}
		if tt.maxViews > 0 {
			stored, serr := rd.Stored(ctx, f)
			var byPost *ReadByPostError
			if !errors.Is(err, ErrReadByPost) || body != nil || !errors.Is(serr, ErrReadByPost) || stored != nil || f.StoredBytes() != nil ||
				!errors.As(err, &byPost) || byPost.Paste.MaxViews != tt.maxViews {
				t.Fatalf("%s: Body and Stored: %v, %v; want ErrReadByPost of the paste and no bytes", tt.name, err, serr)
			}
			got, err := consumer.Consume(ctx, made.Paste.Code)
			if err != nil || string(got.Content) != string(content) || got.Paste.ViewsLeft != tt.maxViews-1 {
				t.Errorf("%s: the POST after Body: %q, %d views left, %v; want the bytes and every view but its own", tt.name, got.Content, got.Paste.ViewsLeft, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(body)
		body.Close()
		if string(data) != string(content) {
			t.Errorf("Body of a paste without a view limit: %q", data)
		}
	}
}

// TestFillKeepsGzipForm: the read that fills the cache with a compressed paste of more than 1 KiB
// keeps its gzip form beside the entry and hands it, with the original bytes, to Filled, behind the
// read; a paste of 1 KiB or less gets none, since no read answers it in gzip.
func TestFillKeepsGzipForm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	s, b := storetest.New(t, logger), blobtest.New(t)
	c, _ := cachetest.New(t, logger)
	cd := codec.New()
	creator := NewCreator(s, b, cd, CreateConfig{Expiry: ExpiryPolicy{Default: time.Hour}, DedupTiming: DedupOff}, time.Now, logger)
	filled := make(chan [2][]byte, 2)
	rd := NewReader(s, b, c, cd, ReadConfig{CacheTTL: time.Hour, CacheMaxBytes: 1 << 20,
		Filled: func(_ store.Paste, original, gzip []byte) { filled <- [2][]byte{original, gzip} }}, time.Now, prometheus.NewRegistry())
	for _, tt := range []struct {
		name    string
		content []byte
		kept    bool
	}{
		{"compressed, 4 KiB", bytes.Repeat([]byte("a line of text\n"), 4<<10/15), true},
		{"compressed, 1 KiB", bytes.Repeat([]byte("x"), codec.MinGzipSize), false},
	} {
		hash := sha256.Sum256(tt.content)
		in := Input{Content: tt.content, Hash: hash[:]}
		if err := in.Tidy(); err != nil {
			t.Fatal(err)
		}
		made, err := creator.Create(ctx, in, IdempotencyKey{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := rd.Find(ctx, made.Paste.Code)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := rd.Stored(ctx, f) // the miss's read fills the cache
		if err != nil {
			t.Fatal(err)
		}
		stored.Close()
		hit, err := rd.Find(ctx, made.Paste.Code)
		if err != nil || hit.StoredBytes() == nil {
			t.Fatalf("%s: no cache hit after the fill: %v", tt.name, err)
		}
		if !tt.kept {
			if gz := rd.KeptGzip(ctx, hit); gz != nil || len(filled) != 0 {
				t.Errorf("%s: a gzip form kept (%d bytes), %d forms handed over; want none", tt.name, len(gz), len(filled))
			}
			continue
		}
		var forms [2][]byte
		select {
		case forms = <-filled: // after the form went to the cache
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no forms handed over", tt.name)
		}
		gz := rd.KeptGzip(ctx, hit)
		z, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatalf("%s: the kept gzip form: %v", tt.name, err)
		}
		if got, err := io.ReadAll(z); err != nil || !bytes.Equal(got, tt.content) {
			t.Errorf("%s: the kept gzip form undoes to %d bytes, %v; want the content", tt.name, len(got), err)
		}
		if !bytes.Equal(forms[0], tt.content) || !bytes.Equal(forms[1], gz) {
			t.Errorf("%s: Filled got forms of %d and %d bytes; want the content and the kept gzip form", tt.name, len(forms[0]), len(forms[1]))
		}
	}
}
