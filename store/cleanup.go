package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// At is the deletion_initiated_at the claim gave its rows (markClaimedSQL). A watchdog
	// reset clears it and a later claim of the same rows sets another, so the finish and the return
	// of this claim, which match it, never touch a row that has become another worker's claim.
	At time.Time
}

// HeapPosition is a place in the heap of pastes: a page, and a line on it.
type HeapPosition struct {
	Page uint32
	Line uint16
}

// lockExpiredSQL reads idx_cleanup_expired (only live rows, in expiry order) from $2 on, and locks
// what it returns; SKIP LOCKED passes over rows another claim holds. The lower bound matters on a
// heavy day: every claimed row leaves a dead entry at the front of the index until VACUUM, and a
// scan from the very front would step over all of them, millions by the end of the drain.
const lockExpiredSQL = `
	SELECT ctid FROM pastes
	WHERE status = 'NOT_EXPIRED' AND expires_at <= now() AND expires_at >= $2
	ORDER BY expires_at
	LIMIT $1
	FOR UPDATE SKIP LOCKED`

// lockExpiredInHeapOrderSQL reads the heap itself from $2 up to $3, page after page (a TID range
// scan), and locks the expired live rows it meets. While a large share of the table is expired, a batch
// then takes every expired row of a few dozen pages, where one in expiry order takes one row on
// each of a thousand pages scattered over the table (and the new versions of its rows, and their
// full-page images in the WAL after each checkpoint, with them).
const lockExpiredInHeapOrderSQL = `
	SELECT ctid FROM pastes
	WHERE ctid >= $2::tid AND ctid < $3::tid AND status = 'NOT_EXPIRED' AND expires_at <= now()
	LIMIT $1
	FOR UPDATE SKIP LOCKED`

// markClaimedSQL moves the locked rows to DELETION_IN_PROGRESS by their ctid: a TID scan, where
// short_code IN (...) hash-joins against a scan of the whole table. Locked rows cannot move before
// the update, so their ctids hold. deletion_initiated_at, the claim's identity (Claim.At), is this
// statement's start rather than its transaction's: a later claim of the same rows runs its statement
// after the watchdog returned them, so after this one, whenever its transaction began.
const markClaimedSQL = `
	UPDATE pastes SET status = 'DELETION_IN_PROGRESS', deletion_initiated_at = statement_timestamp()
	WHERE ctid = ANY ($1::tid[])
	RETURNING short_code, content_hash, expires_at, deletion_initiated_at`

// ClaimExpired moves up to limit expired live pastes, expiring at from or later (the zero time: any),
// to DELETION_IN_PROGRESS and returns them. It first locks the rows (FOR UPDATE SKIP LOCKED), then calls locked, then marks them, in one
// transaction: a caller holding the Redis lock releases it in locked, so the lock covers only the
// choice of rows, and the row locks keep other claims off them until the mark commits. No two
// claims ever share a row, with or without the Redis lock (invariant 7). A claim whose commit
// failed may have committed all the same: its rows are handed back at once (ReturnClaim) rather
// than left to the watchdog.
func (s *Store) ClaimExpired(ctx context.Context, limit int, from time.Time, locked func()) (Claim, error) {
	return s.claim(ctx, lockExpiredSQL, locked, limit, from)
}

// ClaimExpiredInHeapOrder is ClaimExpired in the order of the table's heap, from the place from on
// (the zero HeapPosition: the first page) and before page pages, rather than in expiry order: for a
// backlog that is a large share of the table (BacklogEstimate). pages is the heap's size when the
// run began (HeapPages): the pages added since hold the claims' own new versions, which a claim
// would walk through for nothing. It claims nothing once no expired live row is left from from to
// there; rows behind it (returned by the watchdog, held by a user's transaction as the claims went
// by, or expired since) are left to claims in expiry order.
func (s *Store) ClaimExpiredInHeapOrder(ctx context.Context, limit int, from HeapPosition, pages uint32, locked func()) (Claim, error) {
	return s.claim(ctx, lockExpiredInHeapOrderSQL, locked, limit,
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

func (s *Store) claim(ctx context.Context, lockSQL string, locked func(), args ...any) (Claim, error) {
	var c Claim
	marked := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, lockSQL, args...)
		if err != nil {
			return err
		}
		tids, err := pgx.CollectRows(rows, pgx.RowTo[pgtype.TID])
		if locked != nil {
			locked()
		}
		if err != nil || len(tids) == 0 {
			return err
		}
		c.Next = after(tids)
		rows, err = tx.Query(ctx, markClaimedSQL, tids)
		if err != nil {
			return err
		}
		var code string
		var hash []byte
		var expires time.Time
		_, err = pgx.ForEachRow(rows, []any{&code, &hash, &expires, &c.At}, func() error {
			c.Codes = append(c.Codes, code)
			c.Hashes = append(c.Hashes, append([]byte(nil), hash...))
			if expires.After(c.Last) {
				c.Last = expires
			}
			return nil
		})
		marked = err == nil
		return err
	})
	if err != nil {
		if marked {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_, _ = s.ReturnClaim(rctx, c) // if this fails too, the watchdog will
			cancel()
		}
		return Claim{}, fmt.Errorf("claim expired pastes: %w", err)
	}
	return c, nil
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
// statement: those still in DELETION_IN_PROGRESS under this claim go back to NOT_EXPIRED, as the
// watchdog would return them StuckAfter later. Safe whatever became of them: a row another
// transaction finished meanwhile is DELETED, and a row the watchdog returned and another claim took
// carries that claim's deletion_initiated_at; neither is touched. It returns how many rows went back.
func (s *Store) ReturnClaim(ctx context.Context, c Claim) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE pastes SET status = 'NOT_EXPIRED', deletion_initiated_at = NULL
		WHERE short_code = ANY($1) AND status = 'DELETION_IN_PROGRESS' AND deletion_initiated_at = $2`,
		c.Codes, c.At)
	if err != nil {
		return 0, fmt.Errorf("return claimed pastes: %w", err)
	}
	return tag.RowsAffected(), nil
}

// FinishClaim tombstones the claimed pastes and releases their content in one transaction: one
// statement moves the rows still in DELETION_IN_PROGRESS under this claim (c.At) to DELETED and
// decrements ref_counts grouped by content, a second deletes the content that reached zero and
// queues its blobs. A row the watchdog reset, that another claim took since, or that another
// transaction finished first (a takedown), changes nothing (invariant 6): a late worker neither
// repeats nor steals the work of the worker that holds the rows now. Freed blobs are queued as
// due after outboxDelay: the worker deletes them itself at once, and the outbox is the fallback if
// it dies first. A wrong ref_count among the batch's content fails the whole transaction with
// ErrRefCount; RepairRefCounts(c.Hashes) fixes it.
func (s *Store) FinishClaim(ctx context.Context, c Claim, outboxDelay time.Duration) (Released, error) {
	var rel Released
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		rel, err = tombstone(ctx, tx, c.Codes, c.Hashes, claimed(c.At), ReasonExpired, outboxDelay)
		return err
	})
	return rel, refCountError(err)
}

// resetStuckSQL reads idx_watchdog_stuck, which holds only the rows in flight.
const resetStuckSQL = `
	UPDATE pastes SET status = 'NOT_EXPIRED', deletion_initiated_at = NULL
	WHERE short_code IN (
		SELECT short_code FROM pastes
		WHERE status = 'DELETION_IN_PROGRESS' AND deletion_initiated_at < now() - $1::interval
		ORDER BY deletion_initiated_at
		LIMIT $2
		FOR UPDATE SKIP LOCKED)`

// ResetStuck is the watchdog: rows in DELETION_IN_PROGRESS for longer than olderThan go back to
// NOT_EXPIRED, at most limit of them. Safe whatever happened to their worker: if its transaction
// never committed they are still expired and the next claim takes them; if it did, they are DELETED
// and not touched here. Rows a live transaction holds are skipped.
func (s *Store) ResetStuck(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, resetStuckSQL, olderThan, limit)
	if err != nil {
		return 0, fmt.Errorf("reset stuck pastes: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Backlog is the cleanup work waiting: live pastes past their expiry.
type Backlog struct {
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

// Backlog counts the waiting work. The counts read only the two partial indexes and the outbox
// (small while it drains; the scan that finds its oldest entry is the one that counts it). On a
// heavy day the first count walks millions of entries: it runs in one process, never as a parallel
// query, which would take every core for its seconds and stall users' requests meanwhile.
func (s *Store) Backlog(ctx context.Context) (Backlog, error) {
	var b Backlog
	var oldest, outboxOldest *time.Time
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now()),
			       (SELECT min(expires_at) FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now()),
			       (SELECT count(*) FROM pastes WHERE status = 'DELETION_IN_PROGRESS'),
			       (SELECT count(*) FROM blob_deletions),
			       (SELECT min(coalesce(not_before, enqueued_at)) FROM blob_deletions
			        WHERE coalesce(not_before, enqueued_at) <= now())`).Scan(&b.Expired, &oldest, &b.InProgress, &b.Outbox, &outboxOldest)
	})
	if err != nil {
		return Backlog{}, fmt.Errorf("read backlog: %w", err)
	}
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

// ExplainClaim returns the plan, with its timing and buffers, of a claim's locking scan from from
// (the zero time: the front of the index), run in a transaction that is rolled back: what a claim
// costs at this moment, dead index entries included.
func (s *Store) ExplainClaim(ctx context.Context, limit int, from time.Time) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+lockExpiredSQL, limit, from)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}
