package storetest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SeedSpec describes a population of pastes to load at once, with set-based SQL.
type SeedSpec struct {
	Pastes  int     // pastes in all
	Expired int     // how many of them are past their expiry (the rest expire in a day)
	Shared  float64 // fraction of pastes that reuse content another paste already uses (e.g. 0.4)
	Tag     string  // one letter: distinguishes the codes and contents of several seeds in one database
}

// Seed loads spec into the database: content rows with exact ref_counts and pastes pointing at them,
// the expired ones spread over the table rather than clustered. It returns the blob keys of the
// content rows, which the caller stores in the bucket. Codes are "<tag-letter><10 digits>".
func Seed(ctx context.Context, pool *pgxpool.Pool, spec SeedSpec) ([]string, error) {
	distinct := max(1, int(float64(spec.Pastes)*(1-spec.Shared)))
	tag := spec.Tag
	if len(tag) != 1 {
		return nil, fmt.Errorf("seed tag %q: want one letter", tag)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Content i's hash and key derive from the tag and i, so seeds with other tags never collide.
		_, err := tx.Exec(ctx, `
			INSERT INTO content (content_hash, blob_key, size_bytes, ref_count)
			SELECT sha256(convert_to($1 || i, 'UTF8')),
			       'blobs/' || left(encode(sha256(convert_to($1 || i, 'UTF8')), 'hex'), 2) || '/'
			         || encode(sha256(convert_to($1 || i, 'UTF8')), 'hex') || '.seed',
			       length($1 || i), 0
			FROM generate_series(1, $2) AS i`, tag, distinct)
		if err != nil {
			return fmt.Errorf("seed content: %w", err)
		}
		// The first distinct pastes each take their own content; the others reuse one picked
		// pseudo-randomly, squared towards low numbers (some content is popular). A permutation
		// of i decides which pastes are expired, spreading them over the table.
		_, err = tx.Exec(ctx, `
			INSERT INTO pastes (short_code, content_hash, owner_token_hash, expires_at, created_at)
			SELECT $1 || lpad(i::text, 10, '0'),
			       sha256(convert_to($1 || CASE WHEN i <= $3 THEN i
			            ELSE 1 + floor($3 * power(((i::bigint * 2654435761) % 1000003) / 1000003.0, 2))::int END, 'UTF8')),
			       sha256(convert_to('token' || $1 || i, 'UTF8')),
			       CASE WHEN (7919::bigint * i + 12345) % $2 < $4 THEN now() - interval '1 hour' - (i % 3600) * interval '1 second'
			            ELSE now() + interval '1 day' END,
			       now() - interval '2 hours'
			FROM generate_series(1, $2) AS i`, tag, spec.Pastes, distinct, spec.Expired)
		if err != nil {
			return fmt.Errorf("seed pastes: %w", err)
		}
		_, err = tx.Exec(ctx, `
			UPDATE content c SET ref_count = n.refs
			FROM (SELECT content_hash, count(*) AS refs FROM pastes GROUP BY content_hash) n
			WHERE c.content_hash = n.content_hash AND c.blob_key LIKE '%.seed'`)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Content no paste picked would break invariant 1's exactness at ref_count 0: drop it.
	if _, err := pool.Exec(ctx, `DELETE FROM content WHERE ref_count = 0 AND blob_key LIKE '%.seed'`); err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT blob_key FROM content WHERE blob_key LIKE '%.seed' ORDER BY blob_key`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
