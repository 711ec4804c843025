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
	// Batch is the row of blob_deletion_batches that holds BlobKeys, for a removal queued as one
	// (a cleanup batch's finish); 0 when each key is a row of blob_deletions.
	Batch int64
	// Reason, set by the removal of one paste (removeLive), is why that paste is a tombstone: the
	// reason this call gave it, or the one it had already; "" when cleanup holds it.
	Reason string
}

// state is what a tombstone moves pastes from: any of some statuses.
type state struct {
	statuses []string
}

var (
	// live is what an owner's delete, a burn and a cleanup batch remove. A paste a cleanup claim
	// names (cleanup_claims) is live too until the claim's finish: an operator's takedown of it wins
	// over the finish, and its reason is the one its readers see.
	live = state{statuses: []string{StatusLive}}
	// liveOrClaimed is what an operator takes down: live pastes, and pastes a replica of an older
	// version claimed by moving them to DELETION_IN_PROGRESS (store.ResetStuck), not gone yet either.
	liveOrClaimed = state{statuses: []string{StatusLive, StatusDeleting}}
)

// tombstone moves the pastes codes (whose content hashes are hashes, index for index) from state
// from to DELETED, and releases one content reference for each row that really moved: the
// release is driven by the status transition, in the same transaction (invariant 6), so a retried
// delete, a re-processed batch or a late worker changes nothing. A few statements, whatever the
// number of pastes: tombstone the pastes, then release their content (releaseContent). A
// tombstone is a narrow row of its own: the pastes row is deleted and a tombstones row inserted,
// so the wide row is not written again and no pastes index takes an entry for it.
//
// Every path that removes pastes locks the pastes first and their content after: an owner's
// delete, a burn, a takedown, a block and a cleanup batch alike. Each statement walks its batch
// sorted (pastes by code, content by hash), so two transactions lock the rows they share in one
// order and queue rather than deadlock, as long as the plan is driven by the sorted batch: on a
// table the planner takes for small it may scan the table instead, and a cleanup batch meeting a
// block of the same content can then deadlock, rarely; the transaction that loses runs again (inTx,
// or the cleanup's finish), as a deadlock between any two of them would.
func tombstone(ctx context.Context, tx pgx.Tx, codes []string, hashes [][]byte, from state, reason string, q queueing) (Released, error) {
	// The generic plan drives the delete from the batch, one primary-key probe per paste: O(batch).
	// A custom plan, seeing the status as a literal, may instead read a partial index of pastes
	// and join it against the batch: when claims marked their rows, that was every row in flight
	// and the index's dead entries, hundreds of milliseconds a batch (measured by make
	// bench-cleanup). Pinning it also spares re-planning 1000-element arrays each batch.
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return Released{}, err
	}
	var rel Released
	var released [][]byte
	var counts []int64
	err := tx.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM pastes p
			USING (SELECT * FROM unnest($1::text[], $2::bytea[]) AS t (code, hash) ORDER BY code) AS t
			WHERE p.short_code = t.code AND p.content_hash = t.hash AND p.status = ANY($3::text[])
			RETURNING p.short_code, p.owner_token_hash, t.hash
		), marked AS (
			INSERT INTO tombstones (short_code, owner_token_hash, deleted_reason)
			SELECT short_code, owner_token_hash, $4 FROM gone
		), released AS (
			SELECT hash, count(*) AS n FROM gone GROUP BY hash
		)
		SELECT coalesce((SELECT array_agg(short_code) FROM gone), '{}'),
		       coalesce(array_agg(r.hash ORDER BY r.hash), '{}'), coalesce(array_agg(r.n ORDER BY r.hash), '{}')
		FROM released r`,
		codes, hashes, from.statuses, reason).Scan(&rel.Codes, &released, &counts)
	if err != nil {
		return Released{}, fmt.Errorf("tombstone pastes: %w", err)
	}
	if len(released) == 0 {
		return rel, nil
	}
	if rel.BlobKeys, err = releaseContent(ctx, tx, released, counts, q); err != nil {
		return Released{}, err
	}
	rel.FreedContent = len(rel.BlobKeys)
	if q.batch && len(rel.BlobKeys) > 0 {
		err = tx.QueryRow(ctx, `INSERT INTO blob_deletion_batches (blob_keys, next_attempt) VALUES ($1, now() + $2::interval) RETURNING id`,
			rel.BlobKeys, q.due).Scan(&rel.Batch)
	}
	return rel, err
}

// queueing is how a removal queues the blobs whose content it freed in the outbox.
type queueing struct {
	// batch queues them in one row of blob_deletion_batches (migration 00055), rather than a row of
	// blob_deletions each: for a cleanup batch, whose worker deletes them itself right after its
	// commit (SettleBlobBatch).
	batch bool
	due   time.Duration // from now
}

// perKey is how every removal but a cleanup batch queues its blobs: a row each, due now, for the
// blob deleter that the removal's after-commit step wakes.
var perKey = queueing{}

// freeContentSQL deletes the content rows hashes[i] that hold exactly counts[i] references, the
// batch's own, and, unless $4 (a batch queues them itself), queues their blobs in the outbox, due
// after $3. A key the outbox already holds back (an upload whose create failed, then committed
// after all, see EnqueueAbandonedUploads) is freed now: it becomes an ordinary entry, due after $3.
// A batch leaves such an entry as it is: its worker deletes the blob at once from the batch's own
// row, and the held entry deletes it again later, which is harmless. A row some other transaction
// changed since this statement's snapshot is judged again on its newest version (PostgreSQL's
// EvalPlanQual): a row a create took another reference to is left alone, and decremented next.
const freeContentSQL = `
	WITH r AS (
		SELECT * FROM unnest($1::bytea[], $2::bigint[]) AS r (hash, n) ORDER BY hash
	), freed AS (
		DELETE FROM content c USING r WHERE c.content_hash = r.hash AND c.ref_count = r.n
		RETURNING c.content_hash, c.blob_key
	), queued AS (
		INSERT INTO blob_deletions (blob_key, next_attempt) SELECT blob_key, now() + $3::interval FROM freed WHERE NOT $4
		ON CONFLICT (blob_key) DO UPDATE SET next_attempt = excluded.next_attempt, not_before = NULL
	)
	SELECT content_hash, blob_key FROM freed`

// decrementContentSQL takes counts[i] references off content row hashes[i], in hash order, and
// returns the rows that reached zero: only where another transaction released the row's other
// references between freeContentSQL's snapshot and this statement.
const decrementContentSQL = `
	WITH d AS (
		UPDATE content c SET ref_count = c.ref_count - r.n
		FROM (SELECT * FROM unnest($1::bytea[], $2::bigint[]) AS r (hash, n) ORDER BY hash) AS r
		WHERE c.content_hash = r.hash
		RETURNING c.content_hash, c.ref_count
	)
	SELECT content_hash FROM d WHERE ref_count = 0`

// releaseContent releases counts[i] references of content row hashes[i] and returns the blob keys
// it queued. Each content row is written once: deleted with its blob queued when the batch holds
// all of its references, else decremented. Deleting first takes no lock a concurrent release could
// want: with right counts, no other transaction holds a reference to a row this one frees. A
// decrement that still reaches zero (another release committed meanwhile) deletes the row after,
// so no row is left at zero. A wrong ref_count fails here: below the count on the CHECK
// (ref_count >= 0), equal to it while another paste still points at the row on the foreign key
// (ON DELETE RESTRICT).
func releaseContent(ctx context.Context, tx pgx.Tx, hashes [][]byte, counts []int64, q queueing) ([]string, error) {
	freed, keys, err := freeContent(ctx, tx, hashes, counts, q)
	if err != nil {
		return nil, err
	}
	var rest [][]byte
	var restCounts []int64
	for i, h := range hashes {
		if counts[i] > 0 && !freed[string(h)] {
			rest, restCounts = append(rest, h), append(restCounts, counts[i])
		}
	}
	if len(rest) == 0 {
		return keys, nil
	}
	rows, err := tx.Query(ctx, decrementContentSQL, rest, restCounts)
	if err != nil {
		return nil, fmt.Errorf("release content: %w", err)
	}
	zero, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil || len(zero) == 0 {
		return keys, err
	}
	_, more, err := freeContent(ctx, tx, zero, make([]int64, len(zero)), q)
	return append(keys, more...), err
}

// freeContent runs freeContentSQL and returns the hashes it deleted and their blob keys.
func freeContent(ctx context.Context, tx pgx.Tx, hashes [][]byte, counts []int64, q queueing) (map[string]bool, []string, error) {
	rows, err := tx.Query(ctx, freeContentSQL, hashes, counts, q.due, q.batch)
	if err != nil {
		return nil, nil, fmt.Errorf("release content: %w", err)
	}
	freed := map[string]bool{}
	var keys []string
	var hash []byte
	var key string
	_, err = pgx.ForEachRow(rows, []any{&hash, &key}, func() error {
		freed[string(hash)] = true
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("release content: %w", err)
	}
	return freed, keys, nil
}

// lockContentSQL locks content rows in hash order: the sort runs below the row locks, so they are
// taken in that order, and concurrent repairs (RepairRefCounts) cannot deadlock each other.
const lockContentSQL = `
	SELECT content_hash, ref_count FROM content WHERE content_hash = ANY($1)
	ORDER BY content_hash FOR UPDATE`
