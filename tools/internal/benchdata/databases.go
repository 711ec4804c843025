// Package benchdata keeps a benchmark's loaded state from run to run: a template database that
// each measurement copies, and a bucket's folder in versitygw's data directory snapshotted with
// hard links. Loading millions of pastes takes minutes; restoring them takes seconds. It also holds
// the measurements every cleanup benchmark shares (the set-based floor and the final check), and
// the databases every tool creates and drops, the soak's included.
package benchdata

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"pastebin/store/storetest"
)

// Databases creates, copies and drops the benchmark's databases through an admin connection.
type Databases struct {
	admin    *pgx.Conn
	adminURL string
}

// OpenDatabases connects to the PostgreSQL server of adminURL, a postgres:// URL: the databases it
// creates are named by replacing its path.
func OpenDatabases(ctx context.Context, adminURL string) (*Databases, error) {
	if u, err := url.Parse(adminURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, errors.New("the database URL is not a postgres:// URL") // not shown: it may hold a password
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	return &Databases{admin: conn, adminURL: adminURL}, nil
}

func (d *Databases) Close() { d.admin.Close(context.Background()) }

// Admin is the admin connection, for statements about the server as a whole.
func (d *Databases) Admin() *pgx.Conn { return d.admin }

// URL is the connection URL of database name on the same server.
func (d *Databases) URL(name string) string { return storetest.DatabaseURL(d.adminURL, name) }

// Exists reports whether database name exists.
func (d *Databases) Exists(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := d.admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&ok)
	return ok, err
}

// DropOthers drops the databases whose names start with family but not with keep: the data of
// earlier layouts, which a new layout loads afresh.
func (d *Databases) DropOthers(ctx context.Context, family, keep string) error {
	rows, err := d.admin.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1) AND NOT starts_with(datname, $2)`, family, keep)
	if err != nil {
		return err
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, db := range stale {
		if err := d.Drop(ctx, db); err != nil {
			return err
		}
	}
	return nil
}

// Drop drops database name, if it exists, closing its connections.
func (d *Databases) Drop(ctx context.Context, name string) error {
	_, err := d.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// Create creates an empty database name, dropping one of that name first.
func (d *Databases) Create(ctx context.Context, name string) error {
	if err := d.Drop(ctx, name); err != nil {
		return err
	}
	_, err := d.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// Rename renames database from to to.
func (d *Databases) Rename(ctx context.Context, from, to string) error {
	_, err := d.admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", pgx.Identifier{from}.Sanitize(), pgx.Identifier{to}.Sanitize()))
	return err
}

// Copy gives a measurement a fresh database name, copied from template, with every relation in
// shared buffers and nothing dirty: the same starting point for every measurement.
func (d *Databases) Copy(ctx context.Context, template, name string) error {
	if err := d.Drop(ctx, name); err != nil {
		return err
	}
	_, err := d.admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize()))
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, d.URL(name))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SELECT pg_prewarm(c.oid) FROM pg_class c
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i'); CHECKPOINT`)
	return err
}

// Deadlocks returns the deadlocks PostgreSQL detected in database name, once every connection to it
// has closed: a backend reports its statistics when it exits.
func (d *Databases) Deadlocks(ctx context.Context, name string) (int64, error) {
	if err := d.waitUnused(ctx, name); err != nil {
		return 0, err
	}
	var n int64
	err := d.admin.QueryRow(ctx, `SELECT coalesce((SELECT deadlocks FROM pg_stat_database WHERE datname = $1), 0)`, name).Scan(&n)
	return n, err
}

// waitUnused waits, up to five seconds, until no connection to database name is left.
func (d *Databases) waitUnused(ctx context.Context, name string) error {
	for range 100 {
		var open int
		err := d.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&open)
		if err != nil || open == 0 {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
