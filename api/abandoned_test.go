package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"pastebin/blob/blobtest"
	"pastebin/store/storetest"
)

// TestCreateCancelledAtCommit: a client hangs up while its create's COMMIT is in flight. pgx gives
// up on the commit and the handler sees an error, but PostgreSQL commits all the same. The upload the
// handler queued for deletion must survive a blob deleter that runs before that commit is visible
// (its check that no content row names the key passes then), or the new paste has no blob
// (invariant 2). Once the hold is over, the outbox drops the entry and the blob stays.
func TestCreateCancelledAtCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin("admin-token-of-the-abandoned-upload-test", 1))
	ctx := context.Background()
	gate := storetest.HoldCommits(t, e.store.Pool(), "held at commit")
	reqCtx, hangUp := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := e.request(http.MethodPost, "/?title=held+at+commit", strings.NewReader("cancelled at commit"))
		if resp, err := e.srv.Client().Do(req.WithContext(reqCtx)); err == nil {
			resp.Body.Close()
		}
	}()
	gate.WaitForCommit(t)
	hangUp()
	<-done
	var key string
	storetest.WaitFor(t, "the abandoned upload is in the outbox", func() bool {
		return e.store.Pool().QueryRow(ctx, `SELECT blob_key FROM blob_deletions`).Scan(&key) == nil
	})
	if d, f := e.expirer.DrainOutbox(ctx); d+f != 0 { // before the commit is visible
		t.Logf("the blob deleter took %d keys (%d failed) before the create committed", d, f)
	}
	gate.Open(t)
	var code string
	storetest.WaitFor(t, "the create has committed after all", func() bool {
		return e.store.Pool().QueryRow(ctx, `SELECT short_code FROM pastes WHERE title = 'held at commit'`).Scan(&code) == nil
	})
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
	if r := e.get("/raw/" + code); r.StatusCode != http.StatusOK || r.text() != "cancelled at commit" {
		t.Fatalf("the paste whose client hung up at commit answers %d %q, want its content", r.StatusCode, r.body)
	}

	e.exec(`UPDATE blob_deletions SET not_before = now(), next_attempt = now()`) // the hold is over
	e.expirer.DrainOutbox(ctx)
	if n := e.count(`SELECT count(*) FROM blob_deletions`); n != 0 {
		t.Errorf("%d outbox entries after the hold, want 0: the create committed, the entry is moot", n)
	}
	if keys := blobtest.Keys(t, e.bucket); len(keys) != 1 || keys[0] != key {
		t.Errorf("bucket %v, want only the paste's blob %s", keys, key)
	}
}
