-- +goose Up
-- Room on each page for a row's next version: ref_count is in no index, so with space free its
-- updates (every create, delete and cleanup batch) are HOT and touch no index.
ALTER TABLE content SET (fillfactor = 75);

-- +goose Down
ALTER TABLE content RESET (fillfactor);
