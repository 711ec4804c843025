-- +goose Up

-- Creator keys (issue 18): with PASTEBIN_CREATE_ACCESS=keys only their holders create. A key is a row
-- of its own: the SHA-256 of its secret (never the secret), a label, when it was minted, revoked and
-- last used, and its create rate. Revocation is an update of revoked_at; keys are never deleted, so
-- the pastes that name one keep naming it.
CREATE TABLE creator_keys (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_hash     bytea       NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    label        text        NOT NULL CHECK (label <> '' AND length(label) <= 200),
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz,
    -- Kept up to date within a minute by the replicas that check the key (store/keys.go), never by
    -- the creates themselves, which would all queue on this row.
    last_used_at timestamptz,
    create_rate  text        NOT NULL DEFAULT '120/1m'
);

-- The key that created a paste, or NULL. The constraint is NOT VALID: every existing row is NULL,
-- and validating would scan the whole table under lock for nothing; new rows are checked all the same.
ALTER TABLE pastes ADD COLUMN creator_key_id bigint;
ALTER TABLE pastes ADD CONSTRAINT pastes_creator_key_fk
    FOREIGN KEY (creator_key_id) REFERENCES creator_keys (id) NOT VALID;
-- A key's pastes, newest first (the console's listing, its count) and all of them for a takedown by
-- key. Partial: pastes created without a key, all of them on an open instance, add nothing to it.
-- A removed paste leaves pastes for its narrow tombstone (00050), and so leaves this index too.
CREATE INDEX idx_pastes_creator_key ON pastes (creator_key_id, created_at, short_code)
    WHERE creator_key_id IS NOT NULL;

-- Key actions are admin actions, in the audit log like the others.
ALTER TABLE admin_audit DROP CONSTRAINT admin_audit_action_check;
ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_action_check CHECK (action IN ('cleanup', 'takedown', 'block',
    'unblock', 'sign-in', 'sign-out', 'dismiss', 'key-create', 'key-revoke', 'key-takedown'));

-- +goose Down
-- The audit log is append-only, so entries of key actions stay: the old check is restored for new
-- rows only (NOT VALID).
ALTER TABLE admin_audit DROP CONSTRAINT admin_audit_action_check;
ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_action_check
    CHECK (action IN ('cleanup', 'takedown', 'block', 'unblock', 'sign-in', 'sign-out', 'dismiss')) NOT VALID;
DROP INDEX idx_pastes_creator_key;
ALTER TABLE pastes DROP COLUMN creator_key_id;
DROP TABLE creator_keys;
