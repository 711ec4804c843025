-- +goose Up

-- A deleted paste's tombstone is a narrow row of its own (issue 20): what a reader (410, or 451 for a
-- legal takedown) and a retried delete (204 with the right token, 403 with another) still need, and
-- nothing else. The removal deletes the wide pastes row in the transaction that releases its
-- reference and inserts this one: no new version of the wide row, no entry in the pastes indexes,
-- and nothing of it left in pastes for its vacuums to walk while the tombstone is kept
-- (PASTEBIN_TOMBSTONE_RETENTION). Codes are drawn afresh while a tombstone holds them
-- (store/paste.go, insertPaste).
CREATE TABLE tombstones (
    short_code       text        COLLATE "C" PRIMARY KEY,
    owner_token_hash bytea       NOT NULL CHECK (length(owner_token_hash) = 32),
    deleted_at       timestamptz NOT NULL DEFAULT now(),
    deleted_reason   text        NOT NULL
                     CHECK (deleted_reason IN ('owner', 'burned', 'expired', 'takedown', 'legal'))
);
-- The purge, oldest first. Tombstones arrive in time order, so the index grows at its right edge.
CREATE INDEX idx_tombstones_deleted_at ON tombstones (deleted_at);

-- The tombstones kept so far move over in this migration's transaction: it takes as long as they
-- are many (a retention's worth of deletes and expirations).
INSERT INTO tombstones (short_code, owner_token_hash, deleted_at, deleted_reason)
SELECT short_code, owner_token_hash, deleted_at, coalesce(deleted_reason, 'owner')
FROM pastes WHERE status = 'DELETED';
DELETE FROM pastes WHERE status = 'DELETED';
DROP INDEX idx_tombstone_purge;

-- +goose Down
CREATE INDEX idx_tombstone_purge ON pastes (deleted_at) WHERE status = 'DELETED';
INSERT INTO pastes (short_code, content_hash, owner_token_hash, status, deleted_at, deleted_reason)
SELECT short_code, NULL, owner_token_hash, 'DELETED', deleted_at, deleted_reason FROM tombstones
ON CONFLICT (short_code) DO NOTHING;
DROP TABLE tombstones;
