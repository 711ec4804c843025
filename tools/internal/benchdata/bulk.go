package benchdata

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// definition is a constraint or an index of a table, as the database states it.
type definition struct {
	table, name, kind, sql string // kind: p, u or f for constraints, i for a plain index
}

// LoadWithoutIndexes runs load with the keys, unique constraints, foreign keys and indexes of
// tables dropped, then builds them again as they were: loading tens of millions of rows into
// indexed tables takes many times longer than building the indexes once. The definitions are read
// from the database, so they are exactly what the migrations made.
func LoadWithoutIndexes(ctx context.Context, pool *pgxpool.Pool, tables []string, load func(context.Context) error) error {
	defs, err := definitions(ctx, pool, tables)
	if err != nil {
		return err
	}
	for _, kind := range []string{"f", "p", "u", "i"} { // foreign keys first: they need the keys
		for _, d := range ofKind(defs, kind) {
			q := fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", d.table, pgx.Identifier{d.name}.Sanitize())
			if kind == "i" {
				q = "DROP INDEX " + pgx.Identifier{d.name}.Sanitize()
			}
			if _, err := pool.Exec(ctx, q); err != nil {
				return fmt.Errorf("drop %s: %w", d.name, err)
			}
		}
	}
	if err := load(ctx); err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '1GB'"); err != nil {
		return err
	}
	for _, kind := range []string{"p", "u", "i", "f"} {
		for _, d := range ofKind(defs, kind) {
			q := fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", d.table, pgx.Identifier{d.name}.Sanitize(), d.sql)
			if kind == "i" {
				q = d.sql
			}
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("build %s: %w", d.name, err)
			}
		}
	}
	return nil
}

func definitions(ctx context.Context, pool *pgxpool.Pool, tables []string) ([]definition, error) {
	rows, err := pool.Query(ctx, `
		SELECT conrelid::regclass::text, conname, contype::text, pg_get_constraintdef(oid)
		FROM pg_constraint WHERE conrelid = ANY($1::regclass[]) AND contype IN ('p', 'u', 'f')
		UNION ALL
		SELECT i.indrelid::regclass::text, c.relname, 'i', pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = ANY($1::regclass[])
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u'))`, tables)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (definition, error) {
		var d definition
		err := r.Scan(&d.table, &d.name, &d.kind, &d.sql)
		return d, err
	})
}

func ofKind(defs []definition, kind string) []definition {
	var out []definition
	for _, d := range defs {
		if d.kind == kind {
			out = append(out, d)
		}
	}
	return out
}
