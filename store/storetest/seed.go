package storetest

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SeedSpec describes a population of pastes to load at once, with set-based SQL.
type SeedSpec struct {
	Pastes  int     // pastes in all
	Expired int     // how many of them are past their expiry
	Shared  float64 // fraction of pastes that reuse content another paste already uses (e.g. 0.4)
	Tag     string  // one letter: distinguishes the codes and contents of several seeds in one database
	// ExpiredOver spreads the expired pastes' expiries over this long before the hour before now
	// (default: an hour).
	ExpiredOver time.Duration
	// LiveFor is how long the pastes that are not expired have left (default: a day).
	LiveFor time.Duration
}

// Seed loads spec into the database (Load) and returns the blob keys of every seeded content row
// (of every tag seeded so far), which the caller stores in the bucket.
func Seed(ctx context.Context, pool *pgxpool.Pool, spec SeedSpec) ([]string, error) {
	if err := Load(ctx, pool, spec); err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT blob_key FROM content WHERE blob_key LIKE '%.seed' ORDER BY blob_key`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Load loads spec into the database in one transaction: content rows with exact ref_counts and
// pastes pointing at them, the expired ones spread over the table rather than clustered. Codes are
// "<tag><10 digits>"; paste i's content is the text "<tag><c>" for a content number c, with
// c = i for the first distinct pastes (1 - Shared of them).
func Load(ctx context.Context, pool *pgxpool.Pool, spec SeedSpec) error {
	if len(spec.Tag) != 1 {
		return fmt.Errorf("seed tag %q: want one letter", spec.Tag)
	}
	over, live := cmp.Or(spec.ExpiredOver, time.Hour), cmp.Or(spec.LiveFor, 24*time.Hour)
	distinct := max(1, int(float64(spec.Pastes)*(1-spec.Shared)))
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// The first distinct pastes each take their own content; the others reuse one picked
		// pseudo-randomly, squared towards low numbers (some content is popular: at millions of
		// pastes the first few are shared by thousands). A permutation of i decides which pastes are
		// expired, spreading them over the table.
		_, err := tx.Exec(ctx, `
			CREATE TEMP TABLE seed_map ON COMMIT DROP AS
			SELECT i, CASE WHEN i <= $2 THEN i
			               ELSE 1 + floor($2 * power(((i::bigint * 2654435761) % 1000003) / 1000003.0, 2))::int END AS c,
			       (7919::bigint * i + 12345) % $1 < $3 AS expired
			FROM generate_series(1, $1) AS i`, spec.Pastes, distinct, spec.Expired)
		if err != nil {
			return fmt.Errorf("seed map: %w", err)
		}
		// Content c's hash and key derive from the tag and c, so seeds with other tags never collide.
		_, err = tx.Exec(ctx, `
			INSERT INTO content (content_hash, blob_key, size_bytes, ref_count)
			SELECT h, 'blobs/' || left(encode(h, 'hex'), 2) || '/' || encode(h, 'hex') || '.seed', length($1 || c), refs
			FROM (SELECT c, sha256(convert_to($1 || c, 'UTF8')) AS h, count(*) AS refs FROM seed_map GROUP BY c) AS m`,
			spec.Tag)
		if err != nil {
			return fmt.Errorf("seed content: %w", err)
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO pastes (short_code, content_hash, owner_token_hash, expires_at, created_at)
			SELECT $1 || lpad(i::text, 10, '0'), sha256(convert_to($1 || c, 'UTF8')), sha256(convert_to('token' || $1 || i, 'UTF8')),
			       CASE WHEN expired THEN now() - interval '1 hour' - (i % $2) * interval '1 second'
			            ELSE now() + $3 * interval '1 second' END,
			       now() - interval '2 hours' - $2 * interval '1 second'
			FROM seed_map`, spec.Tag, int64(over.Seconds()), int64(live.Seconds()))
		if err != nil {
			return fmt.Errorf("seed pastes: %w", err)
		}
		return nil
	})
}
