package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// How an admin action came in.
const (
	ViaAPI     = "api"
	ViaConsole = "console"
	ViaCLI     = "cli"
)

// Admin actions, as the audit log names them.
const (
	ActionCleanup     = "cleanup"
	ActionTakedown    = "takedown"
	ActionBlock       = "block"
	ActionUnblock     = "unblock"
	ActionSignIn      = "sign-in"
	ActionSignOut     = "sign-out"
	ActionKeyCreate   = "key-create"
	ActionKeyRevoke   = "key-revoke"
	ActionKeyTakedown = "key-takedown"
)

// Actor is who did an admin action: which admin credential, and through what.
type Actor struct {
	Name string // "token:<fingerprint>", or "cli:<user>@<host>"
	Via  string // ViaAPI, ViaConsole or ViaCLI
}

// TokenActor names the holder of the admin token whose SHA-256 is tokenHash by a short fingerprint
// of that hash: enough to tell credentials apart in the audit log, and nothing an attacker could use
// (a hash of the stored hash, never the token or the hash itself).
func TokenActor(tokenHash []byte, via string) Actor {
	sum := sha256.Sum256(append([]byte("pastebin admin fingerprint:"), tokenHash...))
	return Actor{Name: "token:" + hex.EncodeToString(sum[:4]), Via: via}
}

// AuditRecord is one admin action to record, in the transaction of its effect.
type AuditRecord struct {
	Actor       Actor
	Action      string
	Code        string // the paste acted on, if any
	ContentHash []byte // the content acted on, if known
	Reason      string
	Detail      map[string]any // what the action did
}

// withRun is a's copy naming the cleanup run it started, or joined when one was going already.
func (a AuditRecord) withRun(id int64, joined bool) AuditRecord {
	a.Detail = map[string]any{"run": id, "joined": joined}
	return a
}

// AuditEntry is one recorded admin action.
type AuditEntry struct {
	ID          int64          `json:"id"`
	At          time.Time      `json:"at"`
	Actor       string         `json:"actor"`
	Via         string         `json:"via"`
	Action      string         `json:"action"`
	Code        string         `json:"code,omitempty"`
	ContentHash string         `json:"content_hash,omitempty"` // hex
	Reason      string         `json:"reason"`
	Detail      map[string]any `json:"detail"`
}

// record appends a to the audit log inside tx, so the entry exists exactly when the effect does.
func record(ctx context.Context, tx pgx.Tx, a AuditRecord) error {
	var code *string
	if a.Code != "" {
		code = &a.Code
	}
	detail := a.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	// Encoded here rather than by pgx: behind a transaction pooler no statement is described
	// first, and pgx cannot tell how to send a map to a parameter of unknown type.
	js, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("record %s in the audit log: %w", a.Action, err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO admin_audit (actor, via, action, short_code, content_hash, reason, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)`,
		a.Actor.Name, a.Actor.Via, a.Action, code, a.ContentHash, a.Reason, string(js))
	if err != nil {
		return fmt.Errorf("record %s in the audit log: %w", a.Action, err)
	}
	return nil
}

// RecordJoinedRun records an admin's request for a cleanup run that joined run id, already going:
// the request had no effect of its own to share a transaction with.
func (s *Store) RecordJoinedRun(ctx context.Context, a AuditRecord, id int64) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return record(ctx, tx, a.withRun(id, true)) })
}

// Audit returns up to limit entries of the audit log, newest first, older than the entry before
// (0: from the newest). Paging by id stays right while entries are appended.
func (s *Store) Audit(ctx context.Context, before int64, limit int) ([]AuditEntry, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, at, actor, via, action, coalesce(short_code, ''), coalesce(encode(content_hash, 'hex'), ''),
		       reason, detail
		FROM admin_audit WHERE id < $1
		ORDER BY id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.Via, &e.Action, &e.Code, &e.ContentHash, &e.Reason, &e.Detail)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return entries, nil
}

// purgeAuditSQL deletes a batch of the oldest audit entries past the retention, in one statement.
// The log's append-only trigger lets a DELETE through only for entries older than the transaction's
// pastebin.audit_purge_before (migration 00013): the statement sets it first, in the CTE the
// batch's rows are joined with, so it is set before the first row is deleted, and only for its own
// transaction.
const purgeAuditSQL = `
	WITH allowed AS (
		SELECT set_config('pastebin.audit_purge_before', (now() - $1::interval)::text, true)::timestamptz AS before)
	DELETE FROM admin_audit WHERE id IN (
		SELECT id FROM admin_audit, allowed WHERE at < allowed.before ORDER BY at LIMIT $2)`

// PurgeAudit deletes up to limit audit entries older than retention, the oldest first. A retried
// takedown or block of a paste gone that long ago no longer finds its content there.
func (s *Store) PurgeAudit(ctx context.Context, retention time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, purgeAuditSQL, retention, limit)
	if err != nil {
		return 0, fmt.Errorf("purge the audit log: %w", err)
	}
	return tag.RowsAffected(), nil
}

// auditedContent is the content hash the audit log last recorded for the paste code: how a retried
// takedown or block finds the content of a paste that is a tombstone now (tombstones keep no hash).
func auditedContent(ctx context.Context, tx pgx.Tx, code string) ([]byte, error) {
	var hash []byte
	err := tx.QueryRow(ctx, `
		SELECT content_hash FROM admin_audit WHERE short_code = $1 AND content_hash IS NOT NULL
		ORDER BY id DESC LIMIT 1`, code).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return hash, err
}
