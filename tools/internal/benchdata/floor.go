package benchdata

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Floor does the database work of cleaning every expired paste (tombstones in place of the pastes,
// ref_counts, content at zero and its outbox rows) in one transaction of set-based statements, with no S3 or Redis: the
// fastest the database itself could do it. It returns the pastes cleaned and the time it took.
func Floor(ctx context.Context, pool *pgxpool.Pool) (int64, time.Duration, error) {
	start := time.Now()
	var cleaned int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for i, q := range []string{
			`CREATE TEMP TABLE expired ON COMMIT DROP AS
			 SELECT short_code, content_hash, owner_token_hash FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now()`,
			`DELETE FROM pastes p USING expired e WHERE p.short_code = e.short_code`,
			`INSERT INTO tombstones (short_code, owner_token_hash, deleted_reason)
			 SELECT short_code, owner_token_hash, 'expired' FROM expired`,
			`CREATE TEMP TABLE released ON COMMIT DROP AS SELECT content_hash, count(*) AS n FROM expired GROUP BY 1`,
			`ANALYZE released`,
			// The rows reaching zero are chosen before any decrement, from the same counts.
			`WITH freed AS (DELETE FROM content c USING released r
			                WHERE c.content_hash = r.content_hash AND c.ref_count = r.n RETURNING c.blob_key)
			 INSERT INTO blob_deletions (blob_key) SELECT blob_key FROM freed`,
			`UPDATE content c SET ref_count = c.ref_count - r.n FROM released r WHERE c.content_hash = r.content_hash`,
		} {
			tag, err := tx.Exec(ctx, q)
			if err != nil {
				return err
			}
			if i == 1 {
				cleaned = tag.RowsAffected()
			}
		}
		return nil
	})
	return cleaned, time.Since(start), err
}

// Verify checks, outside any timing, that a cleanup did its whole job right: every ref_count
// exact, no expired paste left, and (outboxDrained) no blob waiting in the outbox. Set-based, so
// that it takes a minute, not an hour, on tens of millions of pastes.
func Verify(ctx context.Context, pool *pgxpool.Pool, outboxDrained bool) error {
	var mismatches, left, outbox int64
	err := pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM content c
		        LEFT JOIN (SELECT content_hash, count(*) AS n FROM pastes WHERE content_hash IS NOT NULL GROUP BY 1) p
		          USING (content_hash)
		        WHERE c.ref_count <> coalesce(p.n, 0)),
		       (SELECT count(*) FROM pastes WHERE expires_at <= now()),
		       (SELECT count(*) FROM blob_outbox)`).Scan(&mismatches, &left, &outbox)
	switch {
	case err != nil:
		return err
	case mismatches > 0 || left > 0:
		return fmt.Errorf("after the run: %d ref_count mismatches, %d expired pastes left", mismatches, left)
	case outboxDrained && outbox > 0:
		return fmt.Errorf("after the run: %d blobs left in the outbox", outbox)
	}
	return nil
}

// Statement is one statement's share of the database's time, from pg_stat_statements.
type Statement struct {
	Calls         int64
	TotalMs, Mean float64
	Rows          int64
	Query         string // its first 90 characters, blanks folded
}

// TopStatements returns the n statements of the current database that took the most time since
// pg_stat_statements was last reset (ResetStatements). The server must preload pg_stat_statements
// (the bench profile does) and the database have the extension.
func TopStatements(ctx context.Context, pool *pgxpool.Pool, n int) ([]Statement, error) {
	rows, err := pool.Query(ctx, `
		SELECT calls, total_exec_time, mean_exec_time, rows, regexp_replace(left(query, 90), '\s+', ' ', 'g')
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT $1`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Statement, error) {
		var s Statement
		err := r.Scan(&s.Calls, &s.TotalMs, &s.Mean, &s.Rows, &s.Query)
		return s, err
	})
}

// ResetStatements starts pg_stat_statements' counts afresh.
func ResetStatements(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	return err
}
