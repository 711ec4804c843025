package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ContentRefs is what the database holds of a content that the spam signal names
// (docs/design.md, "Spam signal").
type ContentRefs struct {
	Hash     []byte
	Stored   bool     // a content row exists; false once every paste of it is gone
	RefCount int64    // its pastes, as content.ref_count counts them
	Blocked  bool     // creates of it are refused
	Codes    []string // a few of its live pastes, newest first
}

// contentRefsSQL reads the contents of $1, in its order, with up to $2 of each one's live pastes:
// any few, not the newest few, so that a content with a million copies costs no more to list than
// one with three (the index on content_hash, stopped at $2 rows).
const contentRefsSQL = `
SELECT h.hash, c.content_hash IS NOT NULL, COALESCE(c.ref_count, 0), b.content_hash IS NOT NULL,
       COALESCE(p.codes, '{}')
FROM unnest($1::bytea[]) WITH ORDINALITY AS h (hash, ord)
LEFT JOIN content c ON c.content_hash = h.hash
LEFT JOIN blocked_content b ON b.content_hash = h.hash
LEFT JOIN LATERAL (
    SELECT array_agg(short_code ORDER BY created_at DESC, short_code) AS codes
    FROM (SELECT short_code, created_at FROM pastes
          WHERE content_hash = h.hash AND status = 'NOT_EXPIRED' AND (expires_at IS NULL OR expires_at > now())
          LIMIT $2) few
) p ON true
ORDER BY h.ord`

// ContentRefs reads hashes' contents, in their order, each with up to codes of its live pastes.
// One statement, whatever the number of hashes.
func (s *Store) ContentRefs(ctx context.Context, hashes [][]byte, codes int) ([]ContentRefs, error) {
	rows, err := s.pool.Query(ctx, contentRefsSQL, hashes, codes)
	if err != nil {
		return nil, fmt.Errorf("read content refs: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ContentRefs])
	if err != nil {
		return nil, fmt.Errorf("read content refs: %w", err)
	}
	return list, nil
}
