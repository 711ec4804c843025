-- +goose Up

-- An upload whose create failed goes to the outbox held back until not_before, the orphan grace
-- period later (issue 16): a create whose client hung up during its COMMIT may have committed all the
-- same, and the blob deleter's check that no content row names the key must not run before that
-- commit is visible. NULL: due as next_attempt says. An entry a content row names once not_before
-- has passed is the create that committed after all, and is dropped. The partial index holds only
-- the held entries, so finding those costs nothing on a heavy day's outbox.
ALTER TABLE blob_deletions ADD COLUMN not_before timestamptz;
CREATE INDEX idx_blob_deletions_held ON blob_deletions (not_before) WHERE not_before IS NOT NULL;

-- +goose Down
DROP INDEX idx_blob_deletions_held;
ALTER TABLE blob_deletions DROP COLUMN not_before;
