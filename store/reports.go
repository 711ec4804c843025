package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// States of an abuse report.
const (
	ReportOpen      = "open"
	ReportActioned  = "actioned"
	ReportDismissed = "dismissed"
)

// ActionDismiss is the audit log's name for an operator's dismissal of a case's reports.
const ActionDismiss = "dismiss"

// ReportReasons are the reasons a report may give, in the order the form lists them.
var ReportReasons = []string{"illegal", "personal_data", "malware", "spam", "copyright", "other"}

// NewReport is a notice about one paste. The store keeps the SHA-256 of its receipt, never the
// receipt itself (docs/design.md, "Abuse reports").
type NewReport struct {
	Code        string
	Reason      string
	Details     string
	Contact     string // "" for none
	ReceiptHash []byte
}

// fileReportSQL files a report on a live paste in one statement: the paste's row gives its content
// hash, so a paste removed or past its expiry files nothing and the caller is told why (Paste).
// Nothing of the paste is changed: a view-limited paste keeps its views. The row is held FOR KEY
// SHARE to the commit, which every removal's FOR UPDATE waits for and which waits for a removal
// holding it: a takedown either commits first, and the report then finds no live row, or sees the
// report and closes it. Without the lock a report could read the row a takedown is deleting, and
// stay open on a paste gone (TestReportsRaceTakedowns). Taking a view (an UPDATE that keeps the
// key) does not wait for it.
const fileReportSQL = `
	INSERT INTO reports (receipt_hash, short_code, content_hash, reason, details, contact)
	SELECT $1, short_code, content_hash, $3, $4, nullif($5, '') FROM pastes
	WHERE short_code = $2 AND status = 'NOT_EXPIRED' AND (expires_at IS NULL OR expires_at > now())
	FOR KEY SHARE`

// FileReport records a report on the live paste r.Code. An unknown paste answers ErrNotFound, one
// that is gone (deleted, burned, taken down, expired) a *GoneError: what its reader is told.
func (s *Store) FileReport(ctx context.Context, r NewReport) error {
	tag, err := s.pool.Exec(ctx, fileReportSQL, r.ReceiptHash, r.Code, r.Reason, r.Details, r.Contact)
	if err != nil {
		return fmt.Errorf("file a report: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	if _, err := s.Paste(ctx, r.Code); err != nil {
		return err
	}
	return &GoneError{Reason: ReasonExpired} // it expired between the two statements
}

// ReportStatus is what the holder of a receipt may learn: the report's state and when it changed.
type ReportStatus struct {
	State     string    `json:"state"`
	ChangedAt time.Time `json:"changed_at"`
}

// ReportStatus answers the state of the report whose receipt has the SHA-256 receiptHash, or
// ErrNotFound.
func (s *Store) ReportStatus(ctx context.Context, receiptHash []byte) (ReportStatus, error) {
	var st ReportStatus
	err := s.pool.QueryRow(ctx, `SELECT state, changed_at FROM reports WHERE receipt_hash = $1`,
		receiptHash).Scan(&st.State, &st.ChangedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, ErrNotFound
	}
	if err != nil {
		return st, fmt.Errorf("read a report: %w", err)
	}
	return st, nil
}

// closeReportsSQL closes the open reports of some pastes ($3) or of one content ($4), whichever is
// given, in the transaction of the action that closes them.
const closeReportsSQL = `
	UPDATE reports SET state = $1, changed_at = now(), closed_by = $2, closed_action = $5
	WHERE state = 'open' AND (short_code = ANY ($3::text[]) OR content_hash = $4)`

// closeReports closes the open reports of the pastes codes, or with hash not nil of the content, as
// state, by the action named action. It answers how many it closed.
func closeReports(ctx context.Context, tx pgx.Tx, state, action string, by Actor, codes []string, hash []byte) (int64, error) {
	if hash != nil {
		codes = nil
	}
	tag, err := tx.Exec(ctx, closeReportsSQL, state, by.Name, codes, hash, action)
	if err != nil {
		return 0, fmt.Errorf("close reports: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Dismiss closes every open report of the content hash as dismissed, with its audit entry, in one
// transaction. It answers how many it closed: 0 when none was open (a retry).
func (s *Store) Dismiss(ctx context.Context, hash []byte, reason string, by Actor) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if n, err = closeReports(ctx, tx, ReportDismissed, ActionDismiss, by, nil, hash); err != nil {
			return err
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionDismiss, ContentHash: hash, Reason: reason,
			Detail: map[string]any{"reports_closed": n}})
	})
	return n, err
}

// purgeReportContactsSQL erases a batch of the oldest contact addresses past the retention.
const purgeReportContactsSQL = `
	UPDATE reports SET contact = NULL WHERE id IN (
		SELECT id FROM reports WHERE contact IS NOT NULL AND created_at < now() - $1::interval
		ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`

// PurgeReportContacts erases up to limit contact addresses of reports filed longer than retention
// ago, the oldest first. The reports themselves stay.
func (s *Store) PurgeReportContacts(ctx context.Context, retention time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, purgeReportContactsSQL, retention, limit)
	if err != nil {
		return 0, fmt.Errorf("purge report contacts: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ReportsBacklog is the open reports: how many, and when the oldest was filed (zero: none).
type ReportsBacklog struct {
	Open   int64
	Oldest time.Time
}

// OpenReports counts the open reports from their partial index.
func (s *Store) OpenReports(ctx context.Context) (ReportsBacklog, error) {
	var b ReportsBacklog
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM reports WHERE state = 'open'`).Scan(&b.Open, &oldest)
	if err != nil {
		return b, fmt.Errorf("count open reports: %w", err)
	}
	if oldest != nil {
		b.Oldest = *oldest
	}
	return b, nil
}

// Report is one report as operators see it.
type Report struct {
	ID           int64     `json:"id"`
	Code         string    `json:"code"`
	ContentHash  string    `json:"content_hash"` // hex
	Reason       string    `json:"reason"`
	Details      string    `json:"details"`
	Contact      string    `json:"contact,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	State        string    `json:"state"`
	ChangedAt    time.Time `json:"changed_at"`
	ClosedBy     string    `json:"closed_by,omitempty"`
	ClosedAction string    `json:"closed_action,omitempty"`
}

// Case is the reports on one content: on one paste, or on several copies of the same bytes.
type Case struct {
	ContentHash string   `json:"content_hash"` // hex
	Codes       []string `json:"codes"`        // the pastes reported, most recently reported first
	Reports     []Report `json:"reports"`      // newest first
}

// reportColumns are a Report's columns, in its fields' order.
const reportColumns = `id, short_code, encode(content_hash, 'hex'), reason, details, coalesce(contact, ''), created_at,
	state, changed_at, coalesce(closed_by, ''), coalesce(closed_action, '')`

// openReportsSQL reads the newest open reports, by when they were filed; closedReportsSQL the
// newest closed in a state, by when they were closed: each from its partial index, whose predicate
// each names as a literal, so that a generic plan of the prepared statement can use it too.
const (
	openReportsSQL   = `SELECT ` + reportColumns + ` FROM reports WHERE state = 'open' ORDER BY created_at DESC, id DESC LIMIT $1`
	closedReportsSQL = `SELECT ` + reportColumns + ` FROM reports WHERE state = $2 AND state <> 'open'
		ORDER BY changed_at DESC, id DESC LIMIT $1`
)

// Cases groups the newest limit reports in state by content, the case of the newest report first.
func (s *Store) Cases(ctx context.Context, state string, limit int) ([]Case, error) {
	q, args := closedReportsSQL, []any{limit, state}
	if state == ReportOpen {
		q, args = openReportsSQL, args[:1]
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	reports, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Report])
	if err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	return groupCases(reports), nil
}

// groupCases groups reports, newest first, by content, keeping that order among cases and within.
func groupCases(reports []Report) []Case {
	cases := []Case{}
	at := map[string]int{}
	for _, r := range reports {
		i, ok := at[r.ContentHash]
		if !ok {
			i = len(cases)
			at[r.ContentHash] = i
			cases = append(cases, Case{ContentHash: r.ContentHash})
		}
		c := &cases[i]
		c.Reports = append(c.Reports, r)
		if !slices.Contains(c.Codes, r.Code) {
			c.Codes = append(c.Codes, r.Code)
		}
	}
	return cases
}

// OpenCase is the open reports on the content hash, newest first; an empty Case when none is open.
func (s *Store) OpenCase(ctx context.Context, hash []byte) (Case, error) {
	rows, err := s.pool.Query(ctx, `

		SELECT `+reportColumns+` FROM reports WHERE state = 'open' AND content_hash = $1
		ORDER BY created_at DESC, id DESC`, hash)
	if err != nil {
		return Case{}, fmt.Errorf("read a case: %w", err)
	}
	reports, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Report])
	if err != nil {
		return Case{}, fmt.Errorf("read a case: %w", err)
	}
	if cases := groupCases(reports); len(cases) == 1 {
		return cases[0], nil
	}
	return Case{ContentHash: hex.EncodeToString(hash), Codes: []string{}, Reports: []Report{}}, nil
}

// ReportedPaste is what an operator sees of a reported paste beside its reports.
type ReportedPaste struct {
	Code      string
	State     string // "live", "expired", or the reason of its tombstone; "unknown" once that is purged
	Title     string
	Size      int64
	CreatedAt *time.Time
	ExpiresAt *time.Time
	MaxViews  int // 0: no view limit
	Encrypted bool
}

// reportedPastesSQL reads the pastes of codes, live or a tombstone, in one statement.
const reportedPastesSQL = `
	SELECT c.code,
	       CASE WHEN p.short_code IS NOT NULL AND p.status = 'NOT_EXPIRED' AND coalesce(p.expires_at > now(), true) THEN 'live'
	            WHEN p.short_code IS NOT NULL THEN 'expired'
	            ELSE coalesce(t.deleted_reason, 'unknown') END,
	       coalesce(p.title, ''), coalesce(cn.size_bytes, 0), p.created_at, p.expires_at,
	       CASE WHEN p.burn_after_read THEN coalesce(p.max_views, 1) ELSE 0 END, coalesce(p.encryption, '') <> ''
	FROM unnest($1::text[]) AS c(code)
	LEFT JOIN pastes p ON p.short_code = c.code
	LEFT JOIN content cn ON cn.content_hash = p.content_hash
	LEFT JOIN tombstones t ON t.short_code = c.code`

// ReportedPastes reads the pastes of codes as operators see them beside reports, by code.
func (s *Store) ReportedPastes(ctx context.Context, codes []string) (map[string]ReportedPaste, error) {
	rows, err := s.pool.Query(ctx, reportedPastesSQL, codes)
	if err != nil {
		return nil, fmt.Errorf("read reported pastes: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ReportedPaste])
	if err != nil {
		return nil, fmt.Errorf("read reported pastes: %w", err)
	}
	out := make(map[string]ReportedPaste, len(list))
	for _, p := range list {
		out[p.Code] = p
	}
	return out, nil
}
