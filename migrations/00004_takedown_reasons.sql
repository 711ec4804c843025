-- +goose NO TRANSACTION
-- +goose Up

-- Operators take pastes down: a takedown is the owner's delete with its own reason, and "legal" is a
-- takedown readers are answered 451 for (RFC 7725). The new check is a superset of the old one, so
-- it is added NOT VALID (no scan under the table's exclusive lock) and validated afterwards, which
-- takes a lock that lets reads and writes go on.
ALTER TABLE pastes
    DROP CONSTRAINT pastes_deleted_reason_check,
    ADD CONSTRAINT pastes_deleted_reason_check
        CHECK (deleted_reason IN ('owner', 'burned', 'expired', 'takedown', 'legal')) NOT VALID;
ALTER TABLE pastes VALIDATE CONSTRAINT pastes_deleted_reason_check;

-- +goose Down
-- Rolling back forgets which tombstones were takedowns: they read as the owner's deletes.
UPDATE pastes SET deleted_reason = 'owner' WHERE deleted_reason IN ('takedown', 'legal');
ALTER TABLE pastes
    DROP CONSTRAINT pastes_deleted_reason_check,
    ADD CONSTRAINT pastes_deleted_reason_check CHECK (deleted_reason IN ('owner', 'burned', 'expired'));
