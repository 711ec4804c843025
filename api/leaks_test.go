package api_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"pastebin/blob/blobtest"
)

// leaks lists where any of secrets is on the server's side: in a text dump of every table of the
// database (bytea columns dump as hex), in any value under the test's Redis prefix, in any object of
// the bucket, or in logs. Each secret is looked for as it is, in hex and in base64.
func (e *env) leaks(t *testing.T, logs string, secrets ...string) []string {
	t.Helper()
	var where []string
	look := func(place, text string) {
		for _, s := range secrets {
			for _, form := range []string{s, hex.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString([]byte(s)),
				base64.RawURLEncoding.EncodeToString([]byte(s))} {
				if strings.Contains(text, form) {
					where = append(where, place+" holds "+strconv.Quote(s))
					break
				}
			}
		}
	}
	for table, dump := range e.dumpTables(t) {
		look("PostgreSQL's "+table, dump)
	}
	for key, value := range e.redisValues(t) {
		look("Redis's "+key, value)
	}
	for _, key := range blobtest.Keys(t, e.bucket) {
		rc, err := e.bucket.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		look("S3's "+key, string(b))
	}
	look("the logs", logs)
	return where
}

// dumpTables is every row of every table of the test's database, as PostgreSQL writes rows as text.
func (e *env) dumpTables(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := e.store.Pool().Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 5 {
		t.Fatalf("tables %v, %v", tables, err)
	}
	dumps := map[string]string{}
	for _, table := range tables {
		var dump string
		q := `SELECT coalesce(string_agg(t::text, E'\n'), '') FROM ` + pgx.Identifier{table}.Sanitize() + ` t`
		if err := e.store.Pool().QueryRow(ctx, q).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		dumps[table] = dump
	}
	return dumps
}

// redisValues is every value under the test's prefix, whatever its type, as text.
func (e *env) redisValues(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	values := map[string]string{}
	iter := e.rdb.Scan(ctx, 0, e.prefix+"*", 100).Iterator()
	for n := 0; iter.Next(ctx) && n < 100000; n++ {
		key := iter.Val()
		var v string
		switch typ := e.rdb.Type(ctx, key).Val(); typ {
		case "string":
			v = e.rdb.Get(ctx, key).Val()
		case "hash":
			v = strings.Join(mapValues(e.rdb.HGetAll(ctx, key).Val()), "\n")
		case "list":
			v = strings.Join(e.rdb.LRange(ctx, key, 0, -1).Val(), "\n")
		case "set":
			v = strings.Join(e.rdb.SMembers(ctx, key).Val(), "\n")
		case "zset":
			v = strings.Join(e.rdb.ZRange(ctx, key, 0, -1).Val(), "\n")
		}
		values[key] = key + "\n" + v
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return values
}

func mapValues(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}
