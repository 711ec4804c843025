-- +goose Up

-- One row per distinct content (SHA-256). ref_count counts the pastes rows pointing here; the blob key
-- is never reused, so deleting an old generation can never remove a newer upload of the same bytes.
CREATE TABLE content (
    content_hash bytea       PRIMARY KEY CHECK (length(content_hash) = 32),
    blob_key     text        COLLATE "C" NOT NULL UNIQUE,
    size_bytes   bigint      NOT NULL CHECK (size_bytes > 0),
    ref_count    bigint      NOT NULL CHECK (ref_count >= 0),
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A DELETED row is a tombstone: its content_hash is NULL, so the content can go while the row still
-- answers 410 to readers and 204 to a retried delete. ON DELETE RESTRICT is the database's own guard:
-- even with a wrong ref_count, PostgreSQL refuses to delete content a paste still points at.
CREATE TABLE pastes (
    short_code            text        COLLATE "C" PRIMARY KEY,
    content_hash          bytea       REFERENCES content (content_hash) ON DELETE RESTRICT,
    owner_token_hash      bytea       NOT NULL CHECK (length(owner_token_hash) = 32),
    title                 text        NOT NULL DEFAULT '',
    language              text        NOT NULL DEFAULT '',
    filename              text        NOT NULL DEFAULT '',
    burn_after_read       boolean     NOT NULL DEFAULT false,
    created_at            timestamptz NOT NULL DEFAULT now(),
    expires_at            timestamptz,
    status                text        NOT NULL DEFAULT 'NOT_EXPIRED'
                          CHECK (status IN ('NOT_EXPIRED', 'DELETION_IN_PROGRESS', 'DELETED')),
    deletion_initiated_at timestamptz,
    deleted_at            timestamptz,
    deleted_reason        text        CHECK (deleted_reason IN ('owner', 'burned', 'expired')),
    CHECK ((status = 'DELETED') = (content_hash IS NULL)),
    CHECK ((status = 'DELETED') = (deleted_at IS NOT NULL)),
    CHECK ((status = 'DELETION_IN_PROGRESS') = (deletion_initiated_at IS NOT NULL))
);

-- Cleanup claims: only live rows, ordered by expiry; a claim moves a row out of this index.
CREATE INDEX idx_cleanup_expired ON pastes (expires_at) WHERE status = 'NOT_EXPIRED';
-- Watchdog: the few rows in flight.
CREATE INDEX idx_watchdog_stuck ON pastes (deletion_initiated_at) WHERE status = 'DELETION_IN_PROGRESS';
-- Tombstone purge.
CREATE INDEX idx_tombstone_purge ON pastes (deleted_at) WHERE status = 'DELETED';
-- Without it every ON DELETE RESTRICT check scans pastes. Tombstones (NULL) are left out: the check
-- looks up a non-NULL hash, and a tombstone then costs no index entry.
CREATE INDEX idx_pastes_content_hash ON pastes (content_hash) WHERE content_hash IS NOT NULL;

-- The outbox of S3 objects to delete. A key lands here in the same transaction that drops its last
-- reference, and leaves only after S3 confirmed the delete.
CREATE TABLE blob_deletions (
    blob_key     text        COLLATE "C" PRIMARY KEY,
    enqueued_at  timestamptz NOT NULL DEFAULT now(),
    attempts     integer     NOT NULL DEFAULT 0,
    next_attempt timestamptz NOT NULL DEFAULT now(),
    last_error   text        NOT NULL DEFAULT ''
);
CREATE INDEX idx_blob_deletions_due ON blob_deletions (next_attempt);

-- Idempotency-Key on creates. The key itself is stored only as a hash; the delete token of the first
-- answer is sealed with a key derived from the raw Idempotency-Key, so only its holder can replay it.
CREATE TABLE idempotency_keys (
    key_hash     bytea       PRIMARY KEY,
    fingerprint  bytea       NOT NULL,
    short_code   text        COLLATE "C" NOT NULL,
    sealed_token bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idx_idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE blob_deletions;
DROP TABLE pastes;
DROP TABLE content;
