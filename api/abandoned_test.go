package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	gate := holdCommits(t, e, "held at commit")
	reqCtx, hangUp := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := e.request(http.MethodPost, "/?title=held+at+commit", strings.NewReader("cancelled at commit"))
		if resp, err := e.srv.Client().Do(req.WithContext(reqCtx)); err == nil {
			resp.Body.Close()
		}
	}()
	gate.waitForCommit(t)
	hangUp()
	<-done
	key := waitForOutboxEntry(t, e)
	if d, f := e.expirer.DrainOutbox(ctx); d+f != 0 { // before the commit is visible
		t.Logf("the blob deleter took %d keys (%d failed) before the create committed", d, f)
	}
	gate.open(t)
	code := waitForPaste(t, e, "held at commit")
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

// commitGate makes the COMMIT of a transaction that inserted a paste with a given title wait until
// the test opens the gate, and then commit whatever its client did meanwhile: a deferred constraint
// trigger runs at COMMIT and waits for an advisory lock that the test holds in a transaction of its
// own.
// The gate's lock is advisory lock 1609: advisory locks are per database, and the database is the test's.
type commitGate struct {
	e    *env
	hold pgx.Tx
}

func holdCommits(t *testing.T, e *env, title string) *commitGate {
	t.Helper()
	// pgx answers a cancelled COMMIT with a cancel request: the trigger shrugs it off and goes on
	// waiting, as a commit past the point where a cancel matters would (its commit record written,
	// its answer lost on the way).
	e.exec(`CREATE FUNCTION test_hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			LOOP
				BEGIN
					PERFORM pg_advisory_xact_lock_shared(1609);
					RETURN NULL;
				EXCEPTION WHEN query_canceled THEN
				END;
			END LOOP;
		END $$`)
	e.exec(`CREATE CONSTRAINT TRIGGER test_hold_commit AFTER INSERT ON pastes DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW WHEN (NEW.title = '` + title + `') EXECUTE FUNCTION test_hold_commit()`)
	tx, err := e.store.Pool().Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `SELECT pg_advisory_xact_lock(1609)`); err != nil {
		t.Fatal(err)
	}
	g := &commitGate{e: e, hold: tx}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return g
}

// waitForCommit returns once a COMMIT waits at the gate.
func (g *commitGate) waitForCommit(t *testing.T) {
	t.Helper()
	for range 2000 {
		if g.e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event = 'advisory' AND query ILIKE 'commit%'`) > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no COMMIT ever waited at the gate")
}

func (g *commitGate) open(t *testing.T) {
	t.Helper()
	if err := g.hold.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitForOutboxEntry returns the one key in the outbox once it is there.
func waitForOutboxEntry(t *testing.T, e *env) string {
	t.Helper()
	for range 2000 {
		var key string
		err := e.store.Pool().QueryRow(context.Background(), `SELECT blob_key FROM blob_deletions`).Scan(&key)
		if err == nil {
			return key
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the abandoned upload never reached the outbox")
	return ""
}

// waitForPaste returns the code of the paste titled title once its create has committed.
func waitForPaste(t *testing.T, e *env, title string) string {
	t.Helper()
	for range 2000 {
		var code string
		err := e.store.Pool().QueryRow(context.Background(), `SELECT short_code FROM pastes WHERE title = $1`, title).Scan(&code)
		if err == nil {
			return code
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the create never committed: the test proves nothing")
	return ""
}
