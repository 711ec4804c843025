-- +goose Up

-- What a run's pacing did and what its batches met on the way (issue 8): how the drain was paced and
-- the limit in force at the last report (NULL: none), why it was below its ceiling, how long workers
-- waited for it; batches run again after a passing failure; content rows whose wrong ref_count
-- broke a batch and were recounted, and the first of their hashes (never paste codes).
ALTER TABLE cleanup_runs
    ADD COLUMN pacing           text             NOT NULL DEFAULT 'off'
        CHECK (pacing IN ('off', 'max_rate', 'auto')),
    ADD COLUMN rate_limit       double precision,
    ADD COLUMN paced_reason     text             NOT NULL DEFAULT '',
    ADD COLUMN paced_seconds    double precision NOT NULL DEFAULT 0,
    ADD COLUMN batches_retried  bigint           NOT NULL DEFAULT 0,
    ADD COLUMN content_repaired bigint           NOT NULL DEFAULT 0,
    ADD COLUMN repaired_hashes  bytea[]          NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE cleanup_runs
    DROP COLUMN pacing, DROP COLUMN rate_limit, DROP COLUMN paced_reason, DROP COLUMN paced_seconds,
    DROP COLUMN batches_retried, DROP COLUMN content_repaired, DROP COLUMN repaired_hashes;
