package store_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"pastebin/store"
	"pastebin/store/storetest"
)

// newLimited creates a paste of content limited to maxViews views, beside others more pastes of
// the same content without a limit, and returns the limited paste.
func newLimited(t *testing.T, s *store.Store, content string, maxViews, others int) store.Paste {
	t.Helper()
	ctx := context.Background()
	np := store.NewPaste{ContentHash: hashOf(content), Size: int64(len(content)),
		OwnerTokenHash: store.HashToken("owner"), MaxViews: maxViews}
	p, err := s.CreatePasteWithBlob(ctx, np, "blobs/"+content)
	if err != nil {
		t.Fatal(err)
	}
	np.MaxViews = 0
	for range others {
		if _, err := s.CreatePasteShared(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestConsumeViewEachViewOnce races 40 readers, on two stores with pools of their own (two
// replicas on one database), for the 7 views of a paste: exactly 7 get one, each a different
// number of views left, and the one that took the last took the paste, released its content
// once and queued its blob. Run with and without another paste on the same content.
func TestConsumeViewEachViewOnce(t *testing.T) {
	t.Parallel()
	for _, others := range []int{0, 2} {
		dbURL := storetest.NewDatabase(t)
		replicas := []*store.Store{openStore(t, dbURL), openStore(t, dbURL)}
		content := "seven views " + string(rune('a'+others))
		p := newLimited(t, replicas[0], content, 7, others)

		var mu sync.Mutex
		var left []int
		var released []store.Released
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 40 {
			wg.Go(func() {
				<-start
				v, err := replicas[i%2].ConsumeView(context.Background(), p.Code)
				var gone *store.GoneError
				switch {
				case errors.As(err, &gone):
					return
				case err != nil:
					t.Errorf("reader %d: %v", i, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				left = append(left, v.ViewsLeft)
				if v.BlobKey != "blobs/"+content {
					t.Errorf("reader %d: blob key %q", i, v.BlobKey)
				}
				if len(v.Released.Codes) > 0 {
					released = append(released, v.Released)
				}
			})
		}
		close(start)
		wg.Wait()

		slices.Sort(left)
		if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6}, left); diff != "" {
			t.Errorf("others %d: views left as the readers saw them (-want +got):\n%s", others, diff)
		}
		want := store.Released{Codes: []string{p.Code}}
		if others == 0 {
			want.FreedContent, want.BlobKeys = 1, []string{"blobs/" + content}
		}
		if diff := cmp.Diff([]store.Released{want}, released, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("others %d: releases (-want +got):\n%s", others, diff)
		}
		checkTaken(t, replicas[0], p.Code, others)
	}
}

func openStore(t *testing.T, dbURL string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// checkTaken checks a paste whose last view was taken: a tombstone that says burned, exact
// ref_counts (invariant 1), and its blob in the outbox exactly when no other paste holds it.
func checkTaken(t *testing.T, s *store.Store, code string, others int) {
	t.Helper()
	var gone *store.GoneError
	if _, err := s.Paste(context.Background(), code); !errors.As(err, &gone) || gone.Reason != store.ReasonBurned {
		t.Errorf("paste after its last view: %v, want gone (burned)", err)
	}
	refCountsExact(t, s)
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_deletions`); (n == 1) != (others == 0) || n > 1 {
		t.Errorf("%d blobs in the outbox with %d other pastes on the content", n, others)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT coalesce(sum(ref_count), 0) FROM content`); n != others {
		t.Errorf("references left: %d, want %d", n, others)
	}
}

// TestConsumeViewCounts: the views left go down one a read, the metadata says how many, and the
// last read leaves nothing to take.
func TestConsumeViewCounts(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	p := newLimited(t, s, "three views", 3, 0)
	if p.MaxViews != 3 || p.ViewsLeft != 3 || !p.ViewLimited() || p.BurnAfterRead() {
		t.Errorf("created: max %d, left %d", p.MaxViews, p.ViewsLeft)
	}
	for want := 2; want >= 0; want-- {
		v, err := s.ConsumeView(ctx, p.Code)
		if err != nil || v.ViewsLeft != want {
			t.Fatalf("view: %+v, %v; want %d left", v, err, want)
		}
		if want == 0 {
			break
		}
		got, err := s.Paste(ctx, p.Code)
		if err != nil || got.MaxViews != 3 || got.ViewsLeft != want {
			t.Errorf("metadata: max %d, left %d, %v; want 3, %d", got.MaxViews, got.ViewsLeft, err, want)
		}
	}
	var gone *store.GoneError
	if _, err := s.ConsumeView(ctx, p.Code); !errors.As(err, &gone) {
		t.Errorf("a fourth view: %v, want gone", err)
	}
	checkTaken(t, s, p.Code, 0)
}

// TestConsumeViewTakesNothingElse: a paste without a limit, an expired one and an unknown code
// give no view, and change nothing.
func TestConsumeViewTakesNothingElse(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	plain := newLimited(t, s, "no limit", 0, 0)
	expired := newLimited(t, s, "expired", 2, 0)
	if _, err := s.Pool().Exec(ctx, `UPDATE pastes SET expires_at = now() - interval '1 second' WHERE short_code = $1`, expired.Code); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{plain.Code, expired.Code, "AAAAAAAAAAA"} {
		if _, err := s.ConsumeView(ctx, code); !errors.Is(err, store.ErrGone) {
			t.Errorf("%s: %v, want gone", code, err)
		}
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes WHERE status = 'NOT_EXPIRED' AND coalesce(views_left, 2) = 2`); n != 2 {
		t.Errorf("%d pastes untouched, want 2", n)
	}
	refCountsExact(t, s)
}

// TestBurnRowsFromBeforeViewLimits: a burn-after-reading paste created before migration 00030
// (burn_after_read set, no view columns) reads as one view of one after it, and its one view
// takes it.
func TestBurnRowsFromBeforeViewLimits(t *testing.T) {
	t.Parallel()
	s := openStore(t, storetest.NewDirectDatabase(t))
	ctx := context.Background()
	for {
		v, err := s.MigrateDown(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v < 30 {
			break
		}
	}
	_, err := s.Pool().Exec(ctx, `
		WITH c AS (
			INSERT INTO content (content_hash, blob_key, size_bytes, ref_count) VALUES ($1, 'blobs/old', 3, 1)
			RETURNING content_hash
		)
		INSERT INTO pastes (short_code, content_hash, owner_token_hash, burn_after_read, expires_at)
		SELECT 'OldBurn0000', content_hash, $2, true, now() + interval '1 day' FROM c`, hashOf("old"), store.HashToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := s.Paste(ctx, "OldBurn0000")
	if err != nil || p.MaxViews != 1 || p.ViewsLeft != 1 || !p.BurnAfterRead() {
		t.Fatalf("old burn paste: %+v, %v; want one view of one", p, err)
	}
	v, err := s.ConsumeView(ctx, "OldBurn0000")
	if err != nil || v.ViewsLeft != 0 || len(v.Released.BlobKeys) != 1 {
		t.Fatalf("its view: %+v, %v", v, err)
	}
	checkTaken(t, s, "OldBurn0000", 0)
}

// TestEncryptedPasteKeepsNoClearMetadata: the format of an encrypted paste is stored and read
// back, and the database refuses a title, file name or language beside it.
func TestEncryptedPasteKeepsNoClearMetadata(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	format := "v1; kdf=pbkdf2-sha256; iter=600000"
	np := store.NewPaste{ContentHash: hashOf("ciphertext"), Size: 10, OwnerTokenHash: store.HashToken("o"),
		Encryption: format, ExpiresAt: time.Now().Add(time.Hour)}
	p, err := s.CreatePasteWithBlob(ctx, np, "blobs/ciphertext")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Paste(ctx, p.Code)
	if err != nil || got.Encryption != format || p.Encryption != format {
		t.Errorf("read back: %q (created %q), %v; want %q", got.Encryption, p.Encryption, err, format)
	}
	np.Title = "in clear"
	if _, err := s.CreatePasteShared(ctx, np); err == nil {
		t.Error("an encrypted paste with a title in clear was stored")
	}
	plain, err := s.CreatePasteShared(ctx, store.NewPaste{ContentHash: hashOf("ciphertext"), Size: 10,
		OwnerTokenHash: store.HashToken("o"), Title: "plain"})
	if err != nil || plain.Encryption != "" {
		t.Errorf("a plain paste: %q, %v", plain.Encryption, err)
	}
}
