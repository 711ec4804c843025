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

// tombstone moves the pastes codes (whose content hashes are hashes, index for index) from status
// from to DELETED, and releases one content reference for each row that really moved: the
// decrement is driven by the status transition in the same statement (invariant 6), so a retried
// delete, a re-processed batch or a late worker changes nothing. Content rows that reached zero are
// then deleted and their blob keys queued in the outbox, due after outboxDelay. Two statements,
// whatever the number of pastes, after a batch has locked its content rows in hash order.
func tombstone(ctx context.Context, tx pgx.Tx, codes []string, hashes [][]byte, from, reason string, outboxDelay time.Duration) (Released, error) {
	// The generic plan drives the update from the batch, one primary-key probe per paste: O(batch).
	// It cannot use idx_watchdog_stuck, since the status is a parameter here, while a custom plan
	// may hash-join against every row in flight (all workers' batches, and the index's dead
	// entries), or, with the status as a literal, nested-loop over them (hundreds of milliseconds,
	// see cleanup-floor.md). Pinning it also spares re-planning 1000-element arrays each batch.
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return Released{}, err
	}
	if len(codes) > 1 {
		if err := lockContentRows(ctx, tx, hashes); err != nil {
			return Released{}, fmt.Errorf("lock content rows: %w", err)
		}
	}
	var rel Released
	var zero [][]byte
	err := tx.QueryRow(ctx, `
		WITH gone AS (
			UPDATE pastes p
			SET status = 'DELETED', content_hash = NULL, deleted_at = now(), deleted_reason = $4,
			    deletion_initiated_at = NULL
			FROM unnest($1::text[], $2::bytea[]) AS t (code, hash)
			WHERE p.short_code = t.code AND p.content_hash = t.hash AND p.status = $3
			RETURNING p.short_code, t.hash
		), released AS (
			SELECT hash, count(*) AS n FROM gone GROUP BY hash
		), decremented AS (
			UPDATE content c SET ref_count = c.ref_count - r.n
			FROM released r WHERE c.content_hash = r.hash
			RETURNING c.content_hash, c.ref_count
		)
		SELECT coalesce((SELECT array_agg(short_code) FROM gone), '{}'),
		       coalesce((SELECT array_agg(content_hash) FROM decremented WHERE ref_count = 0), '{}')`,
		codes, hashes, from, reason).Scan(&rel.Codes, &zero)
	if err != nil {
		return Released{}, fmt.Errorf("tombstone pastes: %w", err)
	}
	if len(zero) > 0 {
		rel.BlobKeys, err = freeContent(ctx, tx, zero, outboxDelay)
		rel.FreedContent = len(rel.BlobKeys)
	}
	return rel, err
}

// freeContent deletes the content rows hashes, which the decrement just brought to zero, and queues
// their blobs. Which rows reach zero must come from the decrement itself: it re-reads rows other
// transactions changed, where a condition evaluated on an older snapshot (ref_count = n) would miss
// a row another batch decremented meanwhile and leave it at zero forever. The decrement also holds
// these rows' locks until commit, so no creator can take a reference between it and this delete.
func freeContent(ctx context.Context, tx pgx.Tx, hashes [][]byte, outboxDelay time.Duration) ([]string, error) {
	rows, err := tx.Query(ctx, `
		WITH freed AS (
			DELETE FROM content WHERE content_hash = ANY($1) AND ref_count = 0 RETURNING blob_key
		)
		INSERT INTO blob_deletions (blob_key, next_attempt) SELECT blob_key, now() + $2::interval FROM freed
		ON CONFLICT (blob_key) DO NOTHING
		RETURNING blob_key`, hashes, outboxDelay)
	if err != nil {
		return nil, fmt.Errorf("free content: %w", err)
	}
	return collectStrings(rows, "free content")
}

// lockContentSQL locks content rows in hash order: the sort runs below the row locks, so they are
// taken in that order. Batches sharing hot content then queue behind each other instead of locking
// the same rows in opposite orders and deadlocking (one transaction would die and be retried).
const lockContentSQL = `
	SELECT content_hash, ref_count FROM content WHERE content_hash = ANY($1)
	ORDER BY content_hash FOR UPDATE`

// lockContentRows locks the content rows hashes (duplicates allowed) in hash order, before a
// statement that updates several of them.
func lockContentRows(ctx context.Context, tx pgx.Tx, hashes [][]byte) error {
	_, err := tx.Exec(ctx, lockContentSQL, hashes)
	return err
}
