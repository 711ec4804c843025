package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnqueueBlobDeletions puts keys in the outbox of blobs to delete, due now. Only for keys no create
// in flight can still name: orphans older than the grace period.
func (s *Store) EnqueueBlobDeletions(ctx context.Context, keys []string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO blob_deletions (blob_key) SELECT unnest($1::text[])
		ON CONFLICT (blob_key) DO NOTHING`, keys)
	if err != nil {
		return fmt.Errorf("enqueue blob deletions: %w", err)
	}
	return nil
}

// EnqueueAbandonedUploads puts in the outbox uploads whose create failed, held back for the orphan
// grace period (OrphanGrace). A create that failed at its COMMIT (its client hung up, the connection
// broke) may have committed all the same, and its content row may become visible only after the
// blob deleter has checked that nothing names the key: due at once, the blob of a live paste could
// go (invariant 2). Held back, the deleter takes the key only once the create's fate is long known,
// and drops the entry if a content row names it (ClaimBlobDeletions).
func (s *Store) EnqueueAbandonedUploads(ctx context.Context, keys []string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO blob_deletions (blob_key, next_attempt, not_before)
		SELECT k, now() + $2::interval, now() + $2::interval FROM unnest($1::text[]) AS k
		ON CONFLICT (blob_key) DO NOTHING`, keys, s.orphanGrace)
	if err != nil {
		return fmt.Errorf("enqueue abandoned uploads: %w", err)
	}
	return nil
}

// claimBlobDeletionsSQL drops the held entries (EnqueueAbandonedUploads) whose time has come and
// whose key a content row names: their create committed after all, and the blob is that content's.
// A release of that content meanwhile clears not_before (releaseContentSQL), so this delete, which
// rechecks the row it waited for, leaves the release's entry alone. Then it leases the due keys that
// nothing names.
const claimBlobDeletionsSQL = `
	WITH settled AS (
		DELETE FROM blob_deletions d
		WHERE d.not_before <= now() AND EXISTS (SELECT 1 FROM content c WHERE c.blob_key = d.blob_key)
	)
	UPDATE blob_deletions SET next_attempt = now() + $2::interval, attempts = attempts + 1
	WHERE blob_key IN (
		SELECT d.blob_key FROM blob_deletions d
		WHERE d.next_attempt <= now()
		  AND NOT EXISTS (SELECT 1 FROM content c WHERE c.blob_key = d.blob_key)
		ORDER BY d.next_attempt
		LIMIT $1
		FOR UPDATE SKIP LOCKED)
	RETURNING blob_key`

// spillBlobBatchesSQL turns the cleanup batches' rows of the outbox that have come due (their
// worker died, or could not settle them) into rows of blob_deletions, a row a key, due now. Two
// deleters spilling at once take each row once: the second's delete finds it gone.
const spillBlobBatchesSQL = `
	WITH due AS (DELETE FROM blob_deletion_batches WHERE next_attempt <= now() RETURNING blob_keys)
	INSERT INTO blob_deletions (blob_key) SELECT unnest(blob_keys) FROM due
	ON CONFLICT (blob_key) DO NOTHING`

// ClaimBlobDeletions takes up to limit due keys from the outbox and leases them for lease: they
// are not due again until then, so concurrent deleters on other replicas leave them alone, and a
// deleter that dies hands them back by itself. A key some content row names is never handed out.
// The cleanup batches' rows that have come due are spilled into keys of their own first.
func (s *Store) ClaimBlobDeletions(ctx context.Context, limit int, lease time.Duration) ([]string, error) {
	if _, err := s.pool.Exec(ctx, spillBlobBatchesSQL); err != nil {
		return nil, fmt.Errorf("claim blob deletions: %w", err)
	}
	rows, err := s.pool.Query(ctx, claimBlobDeletionsSQL, limit, lease)
	if err != nil {
		return nil, fmt.Errorf("claim blob deletions: %w", err)
	}
	return collectStrings(rows, "claim blob deletions")
}

// ClearBlobDeletions removes keys S3 confirmed deleted from the outbox.
func (s *Store) ClearBlobDeletions(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM blob_deletions WHERE blob_key = ANY($1)`, keys); err != nil {
		return fmt.Errorf("clear blob deletions: %w", err)
	}
	return nil
}

// deferBlobDeletionsSQL sets the error of each key $1[i] to $2[i], due again after an exponential
// back-off on its number of attempts (5s, 10s, 20s, ... up to an hour).
const deferBlobDeletionsSQL = `
	UPDATE blob_deletions d
	SET last_error = f.err,
	    next_attempt = now() + least(interval '1 hour', interval '5 seconds' * power(2, least(d.attempts, 20) - 1))
	FROM unnest($1::text[], $2::text[]) AS f (key, err)
	WHERE d.blob_key = f.key`

// DeferBlobDeletions keeps keys whose delete failed, with the error, due again after an exponential
// back-off on their number of attempts.
func (s *Store) DeferBlobDeletions(ctx context.Context, failed map[string]string) error {
	if len(failed) == 0 {
		return nil
	}
	keys, errs := keysAndErrors(failed)
	if _, err := s.pool.Exec(ctx, deferBlobDeletionsSQL, keys, errs); err != nil {
		return fmt.Errorf("defer blob deletions: %w", err)
	}
	return nil
}

// SettleBlobBatch ends the cleanup batch's row id of the outbox (Released.Batch) once its worker
// has had S3 delete the keys: in one transaction, the row goes, and the keys S3 refused (failed,
// with their errors) stay in the outbox as rows of blob_deletions, deferred as DeferBlobDeletions
// defers. If the blob deleter spilled the row first (its worker was slower than its lease), the
// keys are rows already: the deleted ones are deleted again later, which is harmless.
func (s *Store) SettleBlobBatch(ctx context.Context, id int64, failed map[string]string) error {
	keys, errs := keysAndErrors(failed)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			WITH settled AS (DELETE FROM blob_deletion_batches WHERE id = $1)
			INSERT INTO blob_deletions (blob_key) SELECT unnest($2::text[])
			ON CONFLICT (blob_key) DO NOTHING`, id, keys)
		if err != nil || len(keys) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, deferBlobDeletionsSQL, keys, errs)
		return err
	})
	if err != nil {
		return fmt.Errorf("settle a batch of blob deletions: %w", err)
	}
	return nil
}

func keysAndErrors(failed map[string]string) (keys, errs []string) {
	keys = make([]string, 0, len(failed))
	errs = make([]string, 0, len(failed))
	for k, e := range failed {
		keys = append(keys, k)
		errs = append(errs, e)
	}
	return keys, errs
}

// UntrackedBlobKeys returns the keys among keys that neither a content row nor the outbox names:
// the orphan sweeper's candidates.
func (s *Store) UntrackedBlobKeys(ctx context.Context, keys []string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT k FROM unnest($1::text[]) AS k
		WHERE NOT EXISTS (SELECT 1 FROM content c WHERE c.blob_key = k)
		  AND NOT EXISTS (SELECT 1 FROM blob_deletions d WHERE d.blob_key = k)
		  AND k NOT IN (SELECT unnest(blob_keys) FROM blob_deletion_batches)`, keys)
	if err != nil {
		return nil, fmt.Errorf("find untracked blobs: %w", err)
	}
	return collectStrings(rows, "find untracked blobs")
}
