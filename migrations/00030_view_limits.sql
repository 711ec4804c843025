-- +goose NO TRANSACTION
-- +goose Up

-- View limits (issue 19) generalise burn after reading: a paste with max_views is read only by a
-- POST, each of which takes one of its views_left, and the POST that takes the last view tombstones
-- it. burn_after_read now means "read only by a POST" and is set for every view-limited paste, so
-- a replica that predates this migration refuses a GET of one instead of serving it freely.
-- Burn after reading is max_views = 1. Rows from before (burn_after_read, max_views NULL) are read
-- as one view left (store/views.go), so no row is rewritten here and replicas still running the old
-- code keep creating burn pastes that work.
--
-- The columns come without a default, which costs no rewrite; the checks are added NOT VALID (no
-- scan under the table's exclusive lock) and validated afterwards, under a lock that lets reads and
-- writes go on (as 00004 did).
ALTER TABLE pastes
    ADD COLUMN max_views  integer,
    ADD COLUMN views_left integer,
    ADD CONSTRAINT pastes_max_views_check CHECK (max_views BETWEEN 1 AND 1000) NOT VALID,
    ADD CONSTRAINT pastes_views_left_check
        CHECK ((max_views IS NULL) = (views_left IS NULL) AND views_left BETWEEN 0 AND max_views) NOT VALID,
    ADD CONSTRAINT pastes_view_limit_posts_check CHECK (max_views IS NULL OR burn_after_read) NOT VALID;
ALTER TABLE pastes
    VALIDATE CONSTRAINT pastes_max_views_check,
    VALIDATE CONSTRAINT pastes_views_left_check,
    VALIDATE CONSTRAINT pastes_view_limit_posts_check;

-- +goose Down
-- Rolling back keeps every view-limited paste readable by a POST, once: as burn after reading.
ALTER TABLE pastes DROP COLUMN views_left, DROP COLUMN max_views;
