package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// createDatabase creates the soak's own database on the server of adminURL, so the soak never
// touches another test's data, and returns its name and its URL for the pastebin processes.
func createDatabase(ctx context.Context, adminURL string) (string, string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	name := "soak_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", "", err
	}
	u.Path = "/" + name
	q := u.Query()
	q.Set("pool_max_conns", "12") // per process: the shared server serves every other test too
	u.RawQuery = q.Encode()
	return name, u.String(), nil
}

// dropDatabase drops the soak's database, closing whatever connections are left.
func dropDatabase(adminURL, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}
