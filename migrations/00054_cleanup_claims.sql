-- +goose Up

-- A cleanup claim is a row of its own (issue 20): one row per batch, naming the short codes it took.
-- Claiming no longer writes the pastes it takes. Moving each row to DELETION_IN_PROGRESS wrote a new
-- version of the wide row, three index entries and a row lock a paste, about 700 bytes of WAL and a
-- third of the database's time per cleaned paste (docs/performance.md); the batch's row here is
-- about 14 bytes a paste. A paste is claimed while a row here names it: the next claims pass it
-- over (store/cleanup.go), the claim's finish deletes this row in the transaction that tombstones
-- its pastes, and the watchdog deletes rows older than its timeout, which hands their pastes back.
-- The row's id is the claim's identity: a late worker whose claim the watchdog took back finds no
-- row and changes nothing.
CREATE TABLE cleanup_claims (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    claimed_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    codes      text[]      NOT NULL CHECK (cardinality(codes) > 0 AND array_position(codes, NULL) IS NULL)
);
-- Random codes do not compress: stored out of line as they are, without the try.
ALTER TABLE cleanup_claims ALTER COLUMN codes SET STORAGE EXTERNAL;

-- Claims made the old way and not finished go back to the queue, as the watchdog would return them:
-- a replica of the version before still finishing one matches its deletion_initiated_at, finds it
-- cleared and changes nothing. The status column keeps DELETION_IN_PROGRESS for such replicas
-- during a rolling upgrade; the watchdog returns what they leave (store.ResetStuck).
UPDATE pastes SET status = 'NOT_EXPIRED', deletion_initiated_at = NULL WHERE status = 'DELETION_IN_PROGRESS';

-- +goose Down
DROP TABLE cleanup_claims;
