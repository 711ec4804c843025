package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Claim is a batch of expired pastes one cleanup worker took: short codes and their content hashes,
// index for index, the latest expiry among them, and the claim's identity.
type Claim struct {
	Codes  []string
	Hashes [][]byte
	Last   time.Time
	// Next is the place in the heap just past the last row claimed: where a claim in heap order
	// (ClaimExpiredInHeapOrder) that follows this one starts.
	Next HeapPosition
	// ID is the claim's row in cleanup_claims (migrations/00054_cleanup_claims.sql). A watchdog
	// reset deletes it and a later claim of the same pastes makes another, so the finish and the
	// return of this claim, which need it, never touch pastes that have become another worker's claim.
	ID int64
}

// HeapPosition is a place in the heap of pastes: a page, and a line on it.
type HeapPosition struct {
	Page uint32
	Line uint16
}

// ClaimLockClass and ClaimLockKey name the advisory lock that claims take in turn until they
// commit (two-key form, apart from every other advisory lock; pg_locks shows it with classid
// ClaimLockClass, objid ClaimLockKey and objsubid 2). It is what keeps two claims off the same
// pastes: a claim writes nothing to the pastes it takes, so nothing on the rows themselves would
// stop a second claim that ran beside it; in turn, each claim's statement starts after the last
// claim committed and sees its row in cleanup_claims. A claim holds it for its one statement and
// its commit, milliseconds.
const (
	ClaimLockClass int32 = 0x636c6d // "clm"
	ClaimLockKey   int32 = 0
)

// claimSQL records a claim of the pastes chosen by the query in %s and returns them, with the
// claim's id. The pastes named by a claim in cleanup_claims are passed over (one hash of the codes
// in flight, a few thousand). A paste that leaves meanwhile (an owner's delete, a takedown) is
// simply not found by the claim's finish.
const claimSQL = `
	WITH picked AS (%s
	), claim AS (
		INSERT INTO cleanup_claims (codes) SELECT array_agg(short_code) FROM picked HAVING count(*) > 0
		RETURNING id
	)
	SELECT p.ctid, p.short_code, p.content_hash, p.expires_at, c.id FROM picked p CROSS JOIN claim c`

// pickExpiredSQL reads idx_cleanup_expired (only live rows, in expiry order) from $2 on. The lower
// bound matters on a heavy day: every cleaned row leaves a dead entry at the front of the index
// until VACUUM, and a scan from the very front would step over all of them, millions by the end
// of the drain.
const pickExpiredSQL = `
		SELECT ctid, short_code, content_hash, expires_at FROM pastes
		WHERE status = 'NOT_EXPIRED' AND expires_at <= now() AND expires_at >= $2
		  AND short_code NOT IN (SELECT unnest(codes) FROM cleanup_claims)
		ORDER BY expires_at
		LIMIT $1`

// pickExpiredInHeapOrderSQL reads the heap itself from $2 up to $3, page after page (a TID range
// scan), and takes the expired live rows it meets. While a large share of the table is expired, a
// batch then takes every expired row of a few dozen pages, where one in expiry order takes one row
// on each of a thousand pages scattered over the table (and their full-page images in the WAL
// after each checkpoint, when the finish deletes them).
const pickExpiredInHeapOrderSQL = `
		SELECT ctid, short_code, content_hash, expires_at FROM pastes
		WHERE ctid >= $2::tid AND ctid < $3::tid AND status = 'NOT_EXPIRED' AND expires_at <= now()
		  AND short_code NOT IN (SELECT unnest(codes) FROM cleanup_claims)
		LIMIT $1`

// ClaimExpired claims up to limit expired live pastes, expiring at from or later (the zero time:
// any), and returns them. It chooses them and records the claim in one statement, under the claims'
// advisory lock, in one transaction. No two claims ever share a paste, with or without the Redis
// lock (invariant 7). A claim whose commit failed may have committed all the same:
// it is handed back at once (ReturnClaim) rather than left to the watchdog.
func (s *Store) ClaimExpired(ctx context.Context, limit int, from time.Time) (Claim, error) {
	return s.claim(ctx, pickExpiredSQL, limit, from)
}

// ClaimExpiredInHeapOrder is ClaimExpired in the order of the table's heap, from the place from on
// (the zero HeapPosition: the first page) and before page pages, rather than in expiry order: for a
// backlog that is a large share of the table (BacklogEstimate). pages is the heap's size when the
// run began (HeapPages): the pages added since hold new pastes, which are not expired yet. It
// claims nothing once no expired live row is left from from to there; rows behind it (handed back,
// or expired since) are left to claims in expiry order.
func (s *Store) ClaimExpiredInHeapOrder(ctx context.Context, limit int, from HeapPosition, pages uint32) (Claim, error) {
	return s.claim(ctx, pickExpiredInHeapOrderSQL, limit,
		pgtype.TID{BlockNumber: from.Page, OffsetNumber: from.Line, Valid: true}, pgtype.TID{BlockNumber: pages, Valid: true})
}

// HeapPages is how many pages the heap of pastes has now.
func (s *Store) HeapPages(ctx context.Context) (uint32, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT pg_relation_size('pastes') / current_setting('block_size')::bigint`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("heap size of pastes: %w", err)
	}
	return uint32(n), nil
}

// claimBeginSQL takes the claims' advisory lock, and lets the claim's commit return before its
// WAL is on disk: a claim lost to a crash of the database is only a claim that never was (its
// pastes stay live and expired, and the worker's finish, which deletes the claim's row first,
// finds none and changes nothing), while waiting for the flush queued each claim behind the WAL
// of the other workers' finishing transactions. The finish's own commit, which the S3 deletes
// follow, waits for its flush as every other commit does; it flushes the claim's with it.
const claimBeginSQL = `SELECT pg_advisory_xact_lock($1, $2), set_config('synchronous_commit', 'off', true)`

// claim runs the claim of the pastes pickSQL chooses: its transaction's statements go in one
// round trip (a pipeline; a connection's first claim prepares them in one more), since on a
// machine with no idle core each round trip waits for a processor on both sides, and the claim's
// time was mostly those waits (docs/performance.md, "The heavy day"). The transaction is READ
// COMMITTED whatever the database's default: the claim's statement must take its snapshot after
// the lock is granted, not at the transaction's start, to see the claim committed just before it.
// A statement that fails leaves the transaction aborted, and the pool closes a connection it gets
// back in that state.
func (s *Store) claim(ctx context.Context, pickSQL string, args ...any) (Claim, error) {
	var b pgx.Batch
	b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	if deadline, ok := ctx.Deadline(); ok {
		// The server has the claim's statement and its COMMIT as soon as the batch is sent: were
		// the client to give up first (waiting for the lock, say), the claim could commit unseen
		// and hold its pastes until the watchdog. So the server gives up on each of the two
		// statements that may wait within a third of the client's time.
		third := max(1, time.Until(deadline).Milliseconds()/3)
		b.Queue(`SELECT set_config('statement_timeout', $1, true)`, strconv.FormatInt(third, 10))
	}
	b.Queue(claimBeginSQL, ClaimLockClass, ClaimLockKey)
	b.Queue(fmt.Sprintf(claimSQL, pickSQL), args...)
	b.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, &b)
	c, recorded, err := readClaim(br, b.Len()-2)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if recorded {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_, _ = s.ReturnClaim(rctx, c) // if this fails too, the watchdog will
			cancel()
		}
		return Claim{}, fmt.Errorf("claim expired pastes: %w", err)
	}
	return c, nil
}

// readClaim reads the results of claim's pipeline, in order: lead statements before the claim's
// (BEGIN, the lock), the claim's, COMMIT. recorded reports whether the claim's row was written:
// then a failure after it (the commit's) may have committed all the same, and the claim must be
// handed back.
func readClaim(br pgx.BatchResults, lead int) (c Claim, recorded bool, err error) {
	for range lead {
		if _, err := br.Exec(); err != nil {
			return Claim{}, false, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return Claim{}, false, err
	}
	var tid pgtype.TID
	var tids []pgtype.TID
	var code string
	var hash []byte
	var expires time.Time
	_, err = pgx.ForEachRow(rows, []any{&tid, &code, &hash, &expires, &c.ID}, func() error {
		tids = append(tids, tid)
		c.Codes = append(c.Codes, code)
		c.Hashes = append(c.Hashes, append([]byte(nil), hash...))
		if expires.After(c.Last) {
			c.Last = expires
		}
		return nil
	})
	if err != nil || c.ID == 0 {
		return Claim{}, false, err
	}
	c.Next = after(tids)
	_, err = br.Exec() // COMMIT
	return c, true, err
}

// after is the place in the heap just past the last of tids.
func after(tids []pgtype.TID) HeapPosition {
	var last pgtype.TID
	for _, t := range tids {
		if t.BlockNumber > last.BlockNumber || (t.BlockNumber == last.BlockNumber && t.OffsetNumber > last.OffsetNumber) {
			last = t
		}
	}
	return HeapPosition{Page: last.BlockNumber, Line: last.OffsetNumber + 1}
}

// BacklogEstimate is the planner's estimate of the expired live pastes waiting, and of the rows of
// the whole table: read from the statistics in a millisecond, where counting a large backlog walks
// millions of index entries. rows is 0 when the table has never been analyzed.
func (s *Store) BacklogEstimate(ctx context.Context) (expired, rows float64, err error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	err = s.pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT 1 FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now()`).Scan(&plan)
	if err != nil || len(plan) == 0 {
		return 0, 0, fmt.Errorf("estimate the backlog: %w", cmp.Or(err, errors.New("no plan")))
	}
	if err := s.pool.QueryRow(ctx, `SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'pastes'::regclass`).Scan(&rows); err != nil {
		return 0, 0, fmt.Errorf("estimate the backlog: %w", err)
	}
	return plan[0].Plan.Rows, rows, nil
}

// ReturnClaim hands the pastes of claim c, which will not be finished, back to the queue, in one
// statement: it deletes the claim's row, as the watchdog would StuckAfter later. Safe whatever became
// of the claim: if a finish or the watchdog took the row first, nothing happens. It returns how many
// pastes went back.
func (s *Store) ReturnClaim(ctx context.Context, c Claim) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `
		WITH gone AS (DELETE FROM cleanup_claims WHERE id = $1 RETURNING cardinality(codes) AS n)
		SELECT coalesce(sum(n), 0) FROM gone`, c.ID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("return claimed pastes: %w", err)
	}
	return n, nil
}

// FinishClaim tombstones the claimed pastes and releases their content in one transaction: it
// deletes the claim's row first (its row lock orders it against the watchdog and a return), and
// only if that row was still there, tombstones the pastes still live and decrements ref_counts
// grouped by content, then deletes the content that reached zero and queues its blobs. A claim the
// watchdog took back, whose pastes another claim may hold now, changes nothing; a paste that another
// transaction removed first (an owner's delete, a takedown) is not found and changes nothing
// (invariant 6): a late worker neither repeats nor steals the work of the worker that holds the
// rows now. Freed blobs are queued in one row of blob_deletion_batches (Released.Batch), due after
// outboxDelay: the worker deletes them itself at once and settles the row (SettleBlobBatch), and
// the outbox is the fallback if it dies first. A wrong ref_count among the batch's content fails
// the whole transaction with ErrRefCount; RepairRefCounts(c.Hashes) fixes it.
func (s *Store) FinishClaim(ctx context.Context, c Claim, outboxDelay time.Duration) (Released, error) {
	var rel Released
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rel = Released{}
		tag, err := tx.Exec(ctx, `DELETE FROM cleanup_claims WHERE id = $1`, c.ID)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		rel, err = tombstone(ctx, tx, c.Codes, c.Hashes, live, ReasonExpired, queueing{batch: true, due: outboxDelay})
		return err
	})
	return rel, refCountError(err)
}

// resetStuckSQL deletes the claims older than $1, which hands their pastes back to the queue, and
// returns the rows of the claims made by a replica of an older version, which moved the pastes
// themselves to DELETION_IN_PROGRESS (idx_watchdog_stuck holds only those), as that version's
// watchdog did: during a rolling upgrade such a replica may die holding some. It returns how many
// pastes went back.
const resetStuckSQL = `
	WITH claims AS (
		DELETE FROM cleanup_claims WHERE claimed_at < now() - $1::interval
		RETURNING cardinality(codes) AS n
	), legacy AS (
		UPDATE pastes SET status = 'NOT_EXPIRED', deletion_initiated_at = NULL
		WHERE short_code IN (
			SELECT short_code FROM pastes
			WHERE status = 'DELETION_IN_PROGRESS' AND deletion_initiated_at < now() - $1::interval
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		RETURNING 1
	)
	SELECT (SELECT coalesce(sum(n), 0) FROM claims) + (SELECT count(*) FROM legacy)`

// ResetStuck is the watchdog: claims older than olderThan are taken back, and their pastes go back
// to the queue. Safe whatever happened to their worker: if its finish never committed, the pastes
// are still live and expired, and the next claim takes them; if it did, the claim's row is gone and
// not touched here. limit bounds the pastes of an older version's claims returned at a time.
func (s *Store) ResetStuck(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, resetStuckSQL, olderThan, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("reset stuck pastes: %w", err)
	}
	return n, nil
}

// Backlog is the cleanup work waiting: live pastes past their expiry.
type Backlog struct {
	// Expired is how many wait for a claim: counted one by one up to BacklogCounted, the planner's
	// estimate past it.
	Expired    int64
	Oldest     time.Time // expiry of the oldest one; zero when there is none
	InProgress int64     // pastes claimed and not finished
	Outbox     int64     // blobs waiting for deletion
	// OutboxOldest is when the oldest blob in the outbox was queued; zero when it is empty. A blob
	// S3 keeps refusing to delete stays there, while the count alone may look steady. An abandoned
	// upload counts from the end of its hold (EnqueueAbandonedUploads), not while it is held.
	OutboxOldest time.Time
}

// MarshalJSON writes the backlog as the admin API and the CLI show it, with the oldest expiry's age.
func (b Backlog) MarshalJSON() ([]byte, error) {
	out := struct {
		Expired          int64      `json:"expired"`
		OldestExpiredAt  *time.Time `json:"oldest_expired_at"`
		OldestAgeSeconds float64    `json:"oldest_age_seconds"`
		InProgress       int64      `json:"in_progress"`
		Outbox           int64      `json:"outbox"`
		OutboxAgeSeconds float64    `json:"outbox_oldest_age_seconds"`
	}{Expired: b.Expired, InProgress: b.InProgress, Outbox: b.Outbox}
	if !b.Oldest.IsZero() {
		t := b.Oldest.UTC()
		out.OldestExpiredAt, out.OldestAgeSeconds = &t, time.Since(b.Oldest).Seconds()
	}
	if !b.OutboxOldest.IsZero() {
		out.OutboxAgeSeconds = time.Since(b.OutboxOldest).Seconds()
	}
	return json.Marshal(out)
}

// BacklogCounted is how many waiting pastes Backlog counts one by one. On a heavy day a count of
// every one walked ten million index entries, two seconds of a core that every replica spent every
// two minutes for its gauges, and the users felt each (make bench-heavyday); past this, the
// planner's estimate says as much.
const BacklogCounted = 100_000

// Backlog counts the waiting work. The counts read only the two partial indexes, the claims and the
// outbox (small while it drains; the scan that finds its oldest entry is the one that counts it).
// Claimed pastes are live and expired until their finish: they are counted in flight, not waiting.
// The counts run in one process, never as a parallel query, which would take every core at once.
func (s *Store) Backlog(ctx context.Context) (Backlog, error) {
	var b Backlog
	var waiting, claimed int64
	var oldest, outboxOldest *time.Time
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM (SELECT FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now() LIMIT $1) w),
			       (SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims),
			       (SELECT min(expires_at) FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now()
			          AND short_code NOT IN (SELECT unnest(codes) FROM cleanup_claims)),
			       (SELECT count(*) FROM pastes WHERE status = 'DELETION_IN_PROGRESS'),
			       (SELECT count(*) FROM blob_outbox),
			       (SELECT min(coalesce(not_before, enqueued_at)) FROM blob_outbox
			        WHERE coalesce(not_before, enqueued_at) <= now())`, BacklogCounted).Scan(
			&waiting, &claimed, &oldest, &b.InProgress, &b.Outbox, &outboxOldest)
	})
	if err != nil {
		return Backlog{}, fmt.Errorf("read backlog: %w", err)
	}
	if waiting >= BacklogCounted {
		estimate, _, err := s.BacklogEstimate(ctx)
		if err != nil {
			return Backlog{}, fmt.Errorf("read backlog: %w", err)
		}
		waiting = max(waiting, int64(estimate))
	}
	b.Expired, b.InProgress = max(waiting-claimed, 0), b.InProgress+claimed
	if oldest != nil {
		b.Oldest = *oldest
	}
	if outboxOldest != nil {
		b.OutboxOldest = *outboxOldest
	}
	return b, nil
}

// purgeTombstonesSQL reads idx_tombstones_deleted_at, oldest first.
const purgeTombstonesSQL = `
	DELETE FROM tombstones WHERE short_code IN (
		SELECT short_code FROM tombstones
		WHERE deleted_at < now() - $1::interval
		ORDER BY deleted_at
		LIMIT $2
		FOR UPDATE SKIP LOCKED)`

// PurgeTombstones deletes up to limit tombstones older than retention. After that a retried
// delete of such a paste answers 404 instead of 204.
func (s *Store) PurgeTombstones(ctx context.Context, retention time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, purgeTombstonesSQL, retention, limit)
	if err != nil {
		return 0, fmt.Errorf("purge tombstones: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PurgeIdempotencyKeys deletes up to limit Idempotency-Key records past their window.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM idempotency_keys WHERE key_hash IN (
			SELECT key_hash FROM idempotency_keys WHERE created_at <= now() - $1::interval LIMIT $2)`,
		IdempotencyWindow, limit)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ExplainClaim returns the plan, with its timing and buffers, of a claim's choice of pastes from from
// (the zero time: the front of the index), run in a transaction that is rolled back: what a claim
// costs at this moment, dead index entries included.
func (s *Store) ExplainClaim(ctx context.Context, limit int, from time.Time) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+pickExpiredSQL, limit, from)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}
