package paste

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"testing"
	"time"

	"pastebin/blob"
	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// TestRemovalConfirmedByRetry: a delete or a takedown whose cache marker cannot be written has
// committed, and says so (*UnconfirmedError); the same call again, once the cache answers, changes
// nothing in the store and writes the marker over the entry another replica cached (invariant 5).
func TestRemovalConfirmedByRetry(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	s := storetest.New(t, logger)
	live, prefix := cachetest.New(t, logger)
	cut, err := cache.OpenURL(cachetest.RefusedURL(t), cache.ClientOptions{DialTimeout: 100 * time.Millisecond, MaxRetries: -1}, prefix, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cut.Close() })
	by := store.Actor{Name: "test", Via: store.ViaConsole}
	removals := map[string]func(*Remover, string) error{
		store.ReasonOwner: func(rm *Remover, code string) error { return rm.Delete(context.Background(), code, "token") },
		store.ReasonTakedown: func(rm *Remover, code string) error {
			_, err := rm.TakeDown(context.Background(), store.Takedown{Code: code, Reason: "report"}, by)
			return err
		},
	}
	for reason, remove := range removals {
		p := cachedPaste(t, s, live, reason)
		var u *UnconfirmedError
		if err := remove(NewRemover(s, cut, nil, logger), p.Code); !errors.As(err, &u) || u.Takedown != (reason != store.ReasonOwner) {
			t.Fatalf("%s with the cache cut off: got %v, want an *UnconfirmedError", reason, err)
		}
		if _, err := s.Paste(context.Background(), p.Code); !errors.Is(err, store.ErrGone) {
			t.Fatalf("%s with the cache cut off: the paste is %v in the database, want gone", reason, err)
		}
		if err := remove(NewRemover(s, live, nil, logger), p.Code); err != nil {
			t.Fatalf("%s again, the cache back: %v", reason, err)
		}
		if l := live.Get(context.Background(), p.Code, time.Now()); l.Result != cache.Gone || l.Reason != reason {
			t.Errorf("%s confirmed by a retry: the cache answers %v (%q), want gone (%q)", reason, l.Result, l.Reason, reason)
		}
	}
}

// cachedPaste stores a paste whose owner token is "token", and caches it as a replica's read would.
func cachedPaste(t *testing.T, s *store.Store, c *cache.Cache, content string) store.Paste {
	t.Helper()
	ctx := context.Background()
	hash := sha256.Sum256([]byte(content))
	key, err := blob.NewKey(hash[:])
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.CreatePasteWithBlob(ctx, store.NewPaste{ContentHash: hash[:], Size: int64(len(content)),
		OwnerTokenHash: store.HashToken("token")}, key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c.Put(ctx, c.Get(ctx, p.Code, now), toCache(p, []byte(content)), time.Hour, now)
	if l := c.Get(ctx, p.Code, now); l.Result != cache.Hit {
		t.Fatalf("the replica's entry: got %v, want a hit", l.Result)
	}
	return p
}
