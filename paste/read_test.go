package paste

import (
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
	"pastebin/store/storetest"
)

// TestBodyOnlyForGets: Body and Stored, which every read but the consuming POST reads through,
// refuse a paste that burns after reading whoever calls them, and take nothing: the POST still gets
// the bytes.
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
	for _, burn := range []bool{false, true} {
		content := []byte("burn: " + map[bool]string{false: "no", true: "yes"}[burn])
		hash := sha256.Sum256(content)
		made, err := creator.Create(ctx, Input{Content: content, Hash: hash[:], Burn: burn}, IdempotencyKey{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := rd.Find(ctx, made.Paste.Code)
		if err != nil {
			t.Fatal(err)
		}
		body, err := rd.Body(ctx, f)
		if OpenToGet(f.Paste) == burn {
			t.Errorf("burn %v: OpenToGet %v", burn, OpenToGet(f.Paste))
		}
		if burn {
			stored, serr := rd.Stored(ctx, f)
			if !errors.Is(err, ErrReadByPost) || body != nil || !errors.Is(serr, ErrReadByPost) || stored != nil || f.StoredBytes() != nil {
				t.Fatalf("Body and Stored of a burn paste: %v, %v; want ErrReadByPost and no bytes", err, serr)
			}
			if got, err := consumer.Consume(ctx, made.Paste.Code); err != nil || string(got.Content) != string(content) {
				t.Errorf("the POST after Body: %q, %v; want the bytes", got.Content, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(body)
		body.Close()
		if string(data) != string(content) {
			t.Errorf("Body of a paste that does not burn: %q", data)
		}
	}
}
