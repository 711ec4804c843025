-- +goose Up

-- Content operators refuse to store, by SHA-256: a create of these bytes is answered 451 and writes
-- nothing. Who blocked it, when and why; legal says the reason is a legal one.
CREATE TABLE blocked_content (
    content_hash bytea       PRIMARY KEY CHECK (length(content_hash) = 32),
    legal        boolean     NOT NULL DEFAULT false,
    reason       text        NOT NULL CHECK (reason <> ''),
    actor        text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idx_blocked_content_created ON blocked_content (created_at DESC);

-- +goose Down
DROP TABLE blocked_content;
