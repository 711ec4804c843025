-- +goose Up

-- The drain is paced for the whole deployment now (issue 20): a run's report says what the
-- controller steered by (the users' p99, or the finishing transaction's latency, as a ratio to its
-- level before the drain) and which process ran it, beside the rate and the reason.
ALTER TABLE cleanup_runs
    ADD COLUMN pacing_signal     double precision NOT NULL DEFAULT 0,
    ADD COLUMN pacing_source     text             NOT NULL DEFAULT '',
    ADD COLUMN pacing_controller text             NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE cleanup_runs DROP COLUMN pacing_signal, DROP COLUMN pacing_source, DROP COLUMN pacing_controller;
