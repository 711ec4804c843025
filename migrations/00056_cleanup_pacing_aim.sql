-- +goose Up

-- A run's report says where the controller held its signal, beside what the signal read: the aim
-- moves with the signal's measured spread (docs/design.md, "Pacing the drain"), so the signal alone
-- does not say whether the rate was climbing or easing off, nor why. 0: without automatic pacing,
-- or a run reported before this column.
ALTER TABLE cleanup_runs ADD COLUMN pacing_aim double precision NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE cleanup_runs DROP COLUMN pacing_aim;
