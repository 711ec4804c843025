package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"pastebin/tools/internal/benchdata"
)

// createDatabase creates the soak's own database on the server of adminURL, so the soak never
// touches another test's data, and returns its name and its URL for the pastebin processes.
func createDatabase(ctx context.Context, adminURL string) (string, string, error) {
	dbs, err := benchdata.OpenDatabases(ctx, adminURL)
	if err != nil {
		return "", "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer dbs.Close()
	name := "soak_" + randomHex(6)
	if err := dbs.Create(ctx, name); err != nil {
		return "", "", fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(dbs.URL(name))
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	q.Set("pool_max_conns", "12") // per process: the shared server serves every other test too
	u.RawQuery = q.Encode()
	return name, u.String(), nil
}

// dropDatabase drops the soak's database, closing whatever connections are left.
func dropDatabase(adminURL, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbs, err := benchdata.OpenDatabases(ctx, adminURL)
	if err != nil {
		return err
	}
	defer dbs.Close()
	return dbs.Drop(ctx, name)
}
