package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// relSize is one table or index: its size on disk and the rows or entries it holds.
type relSize struct {
	name, table string
	index       bool
	bytes       int64
	entries     int64 // rows of the table; entries of the index (the rows its predicate keeps)
	tupleBytes  int64 // tables: the bytes of their live row versions alone (pgstattuple)
}

func (r relSize) perEntry() float64 {
	if r.entries == 0 {
		return 0
	}
	return float64(r.bytes) / float64(r.entries)
}

// tables are the ones a paste costs rows in.
var tables = []string{"pastes", "content", "tombstones", "idempotency_keys", "blob_deletions", "blob_deletion_batches"}

// sizes reads the size of every table of a paste and of each of its indexes, and how many rows or
// entries each holds.
func (m *measurement) sizes(ctx context.Context) ([]relSize, error) {
	rows, err := m.store.Pool().Query(ctx, `
		SELECT c.relname, t.relname, c.relkind = 'i', pg_relation_size(c.oid), coalesce(pg_get_expr(i.indpred, i.indrelid), '')
		FROM pg_class c
		LEFT JOIN pg_index i ON i.indexrelid = c.oid
		JOIN pg_class t ON t.oid = coalesce(i.indrelid, c.oid)
		WHERE t.relname = ANY($1) AND c.relkind IN ('r', 'i')
		ORDER BY array_position($1, t.relname::text), c.relkind DESC, c.relname`, tables)
	if err != nil {
		return nil, err
	}
	type rel struct {
		relSize
		pred string
	}
	rels, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (rel, error) {
		var r rel
		err := row.Scan(&r.name, &r.table, &r.index, &r.bytes, &r.pred)
		return r, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]relSize, len(rels))
	for i, r := range rels {
		if err := m.countEntries(ctx, &r.relSize, r.pred); err != nil {
			return nil, err
		}
		out[i] = r.relSize
	}
	return out, nil
}

// countEntries counts r's rows (with the bytes of their live versions) or, for an index, the rows
// its predicate keeps.
func (m *measurement) countEntries(ctx context.Context, r *relSize, pred string) error {
	if !r.index {
		return m.store.Pool().QueryRow(ctx, `SELECT tuple_count, tuple_len FROM pgstattuple($1::regclass)`, r.name).
			Scan(&r.entries, &r.tupleBytes)
	}
	where := ""
	if pred != "" {
		where = " WHERE " + pred
	}
	return m.store.Pool().QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s%s", pgx.Identifier{r.table}.Sanitize(), where)).
		Scan(&r.entries)
}

func (m *measurement) logf(format string, args ...any) {
	fmt.Fprintf(m.out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
