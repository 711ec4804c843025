-- +goose Up

-- The blobs a cleanup batch frees wait in one row of their own (issue 20), not in a row of
-- blob_deletions each: the batch's worker deletes them itself right after its finishing transaction
-- commits, so a row per key was written and deleted again within a second, with its two index
-- entries, for about 0.56 freed blob a cleaned paste: a sixth of the database's time per paste
-- (docs/performance.md). The row is the outbox entry of all of them: the worker deletes it once S3
-- has answered (keeping the keys S3 refused as rows of blob_deletions, store.SettleBlobBatch); if the
-- worker dies first, the blob deleter spills a row that has come due into blob_deletions, a row a key
-- (store.ClaimBlobDeletions), and deletes them as any other.
CREATE TABLE blob_deletion_batches (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    blob_keys    text[]      NOT NULL CHECK (cardinality(blob_keys) > 0 AND array_position(blob_keys, NULL) IS NULL),
    enqueued_at  timestamptz NOT NULL DEFAULT now(),
    next_attempt timestamptz NOT NULL
);
-- The keys (about 90 bytes each, a few hundred a row) are stored out of line as they are: they
-- compress by half at best, and trying costs every batch's insert more than it saves.
ALTER TABLE blob_deletion_batches ALTER COLUMN blob_keys SET STORAGE EXTERNAL;

-- The whole outbox, a key a row, for what counts and lists it (fsck, the backlog, the tests' audits).
CREATE VIEW blob_outbox AS
    SELECT blob_key, enqueued_at, next_attempt, not_before, attempts, last_error FROM blob_deletions
    UNION ALL
    SELECT k, b.enqueued_at, b.next_attempt, NULL::timestamptz, 0, ''
    FROM blob_deletion_batches b, unnest(b.blob_keys) AS k;

-- +goose Down
INSERT INTO blob_deletions (blob_key, enqueued_at, next_attempt)
SELECT k, b.enqueued_at, b.next_attempt FROM blob_deletion_batches b, unnest(b.blob_keys) AS k
ON CONFLICT (blob_key) DO NOTHING;
DROP VIEW blob_outbox;
DROP TABLE blob_deletion_batches;
