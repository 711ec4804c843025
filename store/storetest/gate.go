package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// CommitGate holds the COMMIT of every transaction that inserted a paste with a given title until the
// test opens it, and then lets it commit whatever its client did meanwhile: a deferred constraint
// trigger, which runs at COMMIT, waits for an advisory lock the test holds in a transaction of its
// own. A test orders a create against something else with it: the create has done all its work
// and holds its locks, but nothing of it is visible yet.
type CommitGate struct {
	pool *pgxpool.Pool
	hold pgx.Tx
}

// gateLock is the gate's advisory lock. Advisory locks are per database, and each test has its own;
// the one-key form never meets the store's two-key locks.
const gateLock = 1609

// HoldCommits closes a gate on the commits of transactions that insert a paste titled title, in the
// database of pool. The gate opens by itself when the test ends.
func HoldCommits(t testing.TB, pool *pgxpool.Pool, title string) *CommitGate {
	t.Helper()
	ctx := context.Background()
	// pgx answers a COMMIT its caller gave up on with a cancel request: the trigger shrugs it off
	// and waits on, as a commit past the point where a cancel matters would (its commit record
	// written, its answer lost on the way).
	for _, q := range []string{
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION test_hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				LOOP
					BEGIN
						PERFORM pg_advisory_xact_lock_shared(%d);
						RETURN NULL;
					EXCEPTION WHEN query_canceled THEN
					END;
				END LOOP;
			END $$`, gateLock),
		fmt.Sprintf(`CREATE CONSTRAINT TRIGGER test_hold_commit AFTER INSERT ON pastes DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW WHEN (NEW.title = '%s') EXECUTE FUNCTION test_hold_commit()`, strings.ReplaceAll(title, "'", "''")),
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("commit gate: %v", err)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, gateLock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return &CommitGate{pool: pool, hold: tx}
}

// WaitForCommit returns once a COMMIT waits at the gate.
func (g *CommitGate) WaitForCommit(t testing.TB) {
	t.Helper()
	WaitFor(t, "a COMMIT waits at the gate", func() bool {
		return Count(t, g.pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event = 'advisory' AND query ILIKE 'commit%'`) > 0
	})
}

// Open lets the held commits go on.
func (g *CommitGate) Open(t testing.TB) {
	t.Helper()
	if err := g.hold.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// LockWaiters counts the sessions of this test's database that wait for a lock matching where (a
// condition on pg_locks' columns, with args). pg_locks holds every database's locks, and every test
// database is a copy of one template, so its tables have the same oids in all of them: a test that
// counted the waiters of the whole server would count the tests running beside it.
func LockWaiters(t testing.TB, pool *pgxpool.Pool, where string, args ...any) int {
	t.Helper()
	return Count(t, pool, `SELECT count(DISTINCT pid) FROM pg_locks
		WHERE NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND (`+where+`)`, args...)
}

// WaitFor polls cond until it holds, and fails the test if it does not within a minute.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
