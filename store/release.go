package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Released is what a tombstoning transaction did: the pastes it moved to DELETED and the blob keys
// whose content reached zero references and went to the outbox.
type Released struct {
	Codes        []string
	FreedContent int
	BlobKeys     []string
	// Reason, set by the removal of one paste (removeLive), is why that paste is a tombstone: the
	// reason this call gave it, or the one it had already; "" when cleanup holds it.
	Reason string
}

// state is what a tombstone moves pastes from: any of some statuses and, for the rows of one
// cleanup claim, that claim's deletion_initiated_at.
type state struct {
	statuses []string
	claim    *time.Time // nil: whatever claim, if any
}

var (
	live = state{statuses: []string{StatusLive}}
	// liveOrClaimed is what an operator takes down: a paste cleanup has claimed is not gone yet, and
	// the takedown's reason must be the one its readers see.
	liveOrClaimed = state{statuses: []string{StatusLive, StatusDeleting}}
)

// claimed is the state of the rows of the claim made at at.
func claimed(at time.Time) state { return state{statuses: []string{StatusDeleting}, claim: &at} }

// tombstone moves the pastes codes (whose content hashes are hashes, index for index) from state
// from to DELETED, and releases one content reference for each row that really moved: the
// release is driven by the status transition, in the same transaction (invariant 6), so a retried
// delete, a re-processed batch or a late worker changes nothing. Three statements, whatever the
// number of pastes: lock the content rows in hash order, tombstone the pastes, release the content.
func tombstone(ctx context.Context, tx pgx.Tx, codes []string, hashes [][]byte, from state, reason string, outboxDelay time.Duration) (Released, error) {
	// The generic plan drives the update from the batch, one primary-key probe per paste: O(batch).
	// It cannot use idx_watchdog_stuck, since the status is a parameter here, while a custom plan
	// may hash-join against every row in flight (all workers' batches, and the index's dead
	// entries), or, with the status as a literal, nested-loop over them (hundreds of milliseconds
	// a batch, measured by make bench-cleanup). Pinning it also spares re-planning 1000-element arrays each batch.
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return Released{}, err
	}
	if err := lockContentRows(ctx, tx, hashes); err != nil {
		return Released{}, fmt.Errorf("lock content rows: %w", err)
	}
	var rel Released
	var released [][]byte
	var counts []int64
	err := tx.QueryRow(ctx, `
		WITH gone AS (
			UPDATE pastes p
			SET status = 'DELETED', content_hash = NULL, deleted_at = now(), deleted_reason = $4,
			    deletion_initiated_at = NULL
			FROM unnest($1::text[], $2::bytea[]) AS t (code, hash)
			WHERE p.short_code = t.code AND p.content_hash = t.hash AND p.status = ANY($3::text[])
			  AND ($5::timestamptz IS NULL OR p.deletion_initiated_at = $5)
			RETURNING p.short_code, t.hash
		), released AS (
			SELECT hash, count(*) AS n FROM gone GROUP BY hash
		)
		SELECT coalesce((SELECT array_agg(short_code) FROM gone), '{}'),
		       coalesce(array_agg(r.hash ORDER BY r.hash), '{}'), coalesce(array_agg(r.n ORDER BY r.hash), '{}')
		FROM released r`,
		codes, hashes, from.statuses, reason, from.claim).Scan(&rel.Codes, &released, &counts)
	if err != nil {
		return Released{}, fmt.Errorf("tombstone pastes: %w", err)
	}
	if len(released) > 0 {
		rel.BlobKeys, err = releaseContent(ctx, tx, released, counts, outboxDelay)
		rel.FreedContent = len(rel.BlobKeys)
	}
	return rel, err
}

// releaseContentSQL takes counts[i] references off content row hashes[i]: a row left with none is
// deleted and its blob queued in the outbox, due after $3; the others are decremented. Deleting
// the rows that reach zero directly, rather than decrementing them first, writes each once. A key
// the outbox already holds back (an upload whose create failed, then committed after all, see
// EnqueueAbandonedUploads) is freed now: it becomes an ordinary entry, due after $3.
const releaseContentSQL = `
	WITH r AS (
		SELECT * FROM unnest($1::bytea[], $2::bigint[]) AS r (hash, n)
	), freed AS (
		DELETE FROM content c USING r WHERE c.content_hash = r.hash AND c.ref_count = r.n
		RETURNING c.blob_key
	), queued AS (
		INSERT INTO blob_deletions (blob_key, next_attempt) SELECT blob_key, now() + $3::interval FROM freed
		ON CONFLICT (blob_key) DO UPDATE SET next_attempt = excluded.next_attempt, not_before = NULL
		RETURNING blob_key
	), decremented AS (
		UPDATE content c SET ref_count = c.ref_count - r.n
		FROM r WHERE c.content_hash = r.hash AND c.ref_count <> r.n AND r.n > 0
	)
	SELECT blob_key FROM queued`

// releaseContent releases counts[i] references of content row hashes[i] and returns the blob keys
// it queued. The caller holds the rows' locks (lockContentRows): this statement's snapshot, taken
// after, sees their current ref_counts, which no other transaction can change before commit, and no
// creator can take a reference to a row it deletes. A wrong ref_count fails here: below the count
// on the CHECK (ref_count >= 0), equal to it while another paste still points at the row on the
// foreign key (ON DELETE RESTRICT).
func releaseContent(ctx context.Context, tx pgx.Tx, hashes [][]byte, counts []int64, outboxDelay time.Duration) ([]string, error) {
	rows, err := tx.Query(ctx, releaseContentSQL, hashes, counts, outboxDelay)
	if err != nil {
		return nil, fmt.Errorf("release content: %w", err)
	}
	return collectStrings(rows, "release content")
}

// lockContentSQL locks content rows in hash order: the sort runs below the row locks, so they are
// taken in that order. Batches sharing hot content then queue behind each other instead of locking
// the same rows in opposite orders and deadlocking (one transaction would die and be retried).
const lockContentSQL = `
	SELECT content_hash, ref_count FROM content WHERE content_hash = ANY($1)
	ORDER BY content_hash FOR UPDATE`

// lockContentRows locks the content rows hashes (duplicates allowed) in hash order, before the
// statements that release them.
func lockContentRows(ctx context.Context, tx pgx.Tx, hashes [][]byte) error {
	_, err := tx.Exec(ctx, lockContentSQL, hashes)
	return err
}
