-- +goose Up

-- One row per cleanup run, written by the process that runs it and readable by every replica. The
-- counters are updated after each batch; heartbeat_at tells a live run from one whose process died.
CREATE TABLE cleanup_runs (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    trigger       text        NOT NULL CHECK (trigger IN ('schedule', 'admin', 'cli', 'test')),
    host          text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished', 'failed')),
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    heartbeat_at  timestamptz NOT NULL DEFAULT now(),
    workers       integer     NOT NULL,
    reset_stuck   bigint      NOT NULL DEFAULT 0,
    claimed       bigint      NOT NULL DEFAULT 0,
    tombstoned    bigint      NOT NULL DEFAULT 0,
    content_freed bigint      NOT NULL DEFAULT 0,
    blobs_deleted bigint      NOT NULL DEFAULT 0,
    blobs_failed  bigint      NOT NULL DEFAULT 0,
    purged        bigint      NOT NULL DEFAULT 0,
    batches       bigint      NOT NULL DEFAULT 0,
    errors        bigint      NOT NULL DEFAULT 0,
    last_error    text        NOT NULL DEFAULT ''
);
CREATE INDEX idx_cleanup_runs_started ON cleanup_runs (started_at DESC);

-- +goose Down
DROP TABLE cleanup_runs;
