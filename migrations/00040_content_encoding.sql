-- +goose Up

-- How a content's blob is stored (issue 19, compression at rest): encoding NULL is the original
-- bytes, as every blob stored before this column is; 'zstd' is a zstd frame of stored_bytes bytes.
-- size_bytes stays the size of the original bytes, which the content hash is of. Two nullable
-- columns without a default change only the catalog, and every existing row satisfies the checks
-- (all NULL), so they are added NOT VALID: no scan of the table under its exclusive lock.
ALTER TABLE content ADD COLUMN encoding text, ADD COLUMN stored_bytes bigint;
ALTER TABLE content ADD CONSTRAINT content_encoding_known CHECK (encoding IN ('zstd')) NOT VALID;
ALTER TABLE content ADD CONSTRAINT content_stored_bytes_positive CHECK (stored_bytes > 0) NOT VALID;
ALTER TABLE content ADD CONSTRAINT content_stored_bytes_with_encoding
    CHECK ((encoding IS NULL) = (stored_bytes IS NULL)) NOT VALID;

-- +goose Down
-- The version before this one would serve a zstd frame as the text: refuse while one is stored.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM content WHERE encoding IS NOT NULL) THEN
        RAISE EXCEPTION 'content is stored compressed: the schema before 00040 cannot serve it';
    END IF;
END $$;
-- +goose StatementEnd
ALTER TABLE content DROP COLUMN encoding, DROP COLUMN stored_bytes;
