-- +goose NO TRANSACTION
-- +goose Up

-- End-to-end encrypted pastes (issue 19): the content is ciphertext the server cannot read, and
-- encryption is the format it is in, as the creator named it (docs/encryption.md), checked for
-- shape only and handed back to readers so they know how to decrypt. NULL: plain text. Title, file
-- name and language travel inside the ciphertext; the check keeps any of them from being stored in
-- clear beside it. Added NOT VALID and validated afterwards, as 00030 does.
ALTER TABLE pastes
    ADD COLUMN encryption text,
    ADD CONSTRAINT pastes_encryption_check
        CHECK (encryption IS NULL OR length(encryption) BETWEEN 1 AND 100
               AND title = '' AND filename = '' AND language = '') NOT VALID;
ALTER TABLE pastes VALIDATE CONSTRAINT pastes_encryption_check;

-- +goose Down
ALTER TABLE pastes DROP COLUMN encryption;
