package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// fileReport files a report on code with receipt, failing the test on an error.
func fileReport(t *testing.T, s *store.Store, code, receipt string) {
	t.Helper()
	err := s.FileReport(context.Background(), store.NewReport{Code: code, Reason: "spam", Details: "buy now",
		Contact: "me@example.org", ReceiptHash: store.HashToken(receipt)})
	if err != nil {
		t.Fatalf("report %s: %v", code, err)
	}
}

// TestReportsFileAndAnswer: a report on a live paste is filed and its receipt answers open; one on
// an unknown paste is ErrNotFound, on a gone one the reader's *GoneError, and nothing is filed.
func TestReportsFileAndAnswer(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	codes := newContent(t, s, "reported", 2)
	fileReport(t, s, codes[0], "r1")
	st, err := s.ReportStatus(ctx, store.HashToken("r1"))
	if err != nil || st.State != store.ReportOpen || time.Since(st.ChangedAt) > time.Minute {
		t.Errorf("status: %+v, %v; want open, just now", st, err)
	}
	if _, err := s.ReportStatus(ctx, store.HashToken("nobody's")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown receipt: %v, want ErrNotFound", err)
	}
	nr := store.NewReport{Code: "Unknown0000", Reason: "spam", ReceiptHash: store.HashToken("r2")}
	if err := s.FileReport(ctx, nr); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("report on an unknown paste: %v, want ErrNotFound", err)
	}
	if _, err := s.TakeDown(ctx, store.Takedown{Code: codes[1], Reason: "x", Legal: true}, operator); err != nil {
		t.Fatal(err)
	}
	nr.Code = codes[1]
	var gone *store.GoneError
	if err := s.FileReport(ctx, nr); !errors.As(err, &gone) || gone.Reason != store.ReasonLegal {
		t.Errorf("report on a paste taken down: %v, want gone (legal)", err)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM reports`); n != 1 {
		t.Errorf("%d reports, want the one on the live paste", n)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM reports WHERE receipt_hash = $1`, []byte("r1")); n != 0 {
		t.Error("the receipt is stored as it is, want only its hash")
	}
}

// TestReportsClosedByTheirDecision: a takedown closes the open reports of its paste, a takedown with
// a block (and a block that takes down) every open report of the content, a dismissal those of
// the content; each in its transaction, with its audit entry; a block alone closes none.
func TestReportsClosedByTheirDecision(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	copies := newContent(t, s, "copied", 3)
	other := newContent(t, s, "other", 1)[0]
	dismissed := newContent(t, s, "fine", 2)
	for i, code := range append(append(copies, other), dismissed...) {
		fileReport(t, s, code, "receipt"+string(rune('a'+i)))
	}
	cases, err := s.Cases(ctx, store.ReportOpen, 100)
	if err != nil || len(cases) != 3 || len(cases[0].Codes) != 2 || len(cases[2].Codes) != 3 {
		t.Fatalf("open cases: %+v, %v; want 3 cases, newest first, grouped by content", cases, err)
	}

	res, err := s.TakeDown(ctx, store.Takedown{Code: copies[0], Reason: "spam"}, operator)
	if err != nil || res.ReportsClosed != 1 {
		t.Errorf("takedown of one copy: closed %d reports, %v; want its 1", res.ReportsClosed, err)
	}
	b, err := s.Block(ctx, store.Block{Code: other, Reason: "spam"}, operator)
	if err != nil || b.ReportsClosed != 0 {
		t.Errorf("a block alone: closed %d, %v; want none (the paste stays up)", b.ReportsClosed, err)
	}
	res, err = s.TakeDown(ctx, store.Takedown{Code: copies[1], Reason: "spam", Block: true}, operator)
	if err != nil || res.ReportsClosed != 2 {
		t.Errorf("takedown and block: closed %d, %v; want the 2 left on the content", res.ReportsClosed, err)
	}
	n, err := s.Dismiss(ctx, hashOf("fine"), "not abuse", operator)
	if err != nil || n != 2 {
		t.Errorf("dismiss: closed %d, %v; want 2", n, err)
	}
	if n, _ := s.Dismiss(ctx, hashOf("fine"), "again", operator); n != 0 {
		t.Errorf("dismiss again: closed %d, want 0", n)
	}
	for _, c := range []struct {
		receipt, state string
	}{{"receipta", store.ReportActioned}, {"receiptc", store.ReportActioned}, {"receiptd", store.ReportOpen}, {"receipte", store.ReportDismissed}} {
		if st, err := s.ReportStatus(ctx, store.HashToken(c.receipt)); err != nil || st.State != c.state {
			t.Errorf("%s: %+v, %v; want %s", c.receipt, st, err, c.state)
		}
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM admin_audit WHERE action = 'dismiss' AND detail->>'reports_closed' = '2'`); n != 1 {
		t.Errorf("%d audit entries of the dismissal, want 1", n)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM reports WHERE state = 'actioned' AND closed_action = 'block' AND closed_by = 'token:test'`); n != 2 {
		t.Errorf("%d reports closed by the block, want 2 naming it and its operator", n)
	}
	closed, err := s.Cases(ctx, store.ReportActioned, 100)
	if err != nil || len(closed) != 1 || len(closed[0].Reports) != 3 {
		t.Errorf("actioned cases: %+v, %v; want the copies' case, its 3 reports", closed, err)
	}
	b2, err := s.OpenReports(ctx)
	if err != nil || b2.Open != 1 || b2.Oldest.IsZero() {
		t.Errorf("open reports: %+v, %v; want the 1 on the blocked-only paste", b2, err)
	}
}

// TestReportContactsPurge: contact addresses past the retention are erased in batches, the oldest
// first; the reports stay, and younger contacts are kept.
func TestReportContactsPurge(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	code := newContent(t, s, "old", 1)[0]
	_, err := s.Pool().Exec(ctx, `
		INSERT INTO reports (receipt_hash, short_code, content_hash, reason, contact, created_at)
		SELECT sha256(i::text::bytea), $1, $2, 'spam', 'a@example.org', now() - interval '100 days' + i * interval '1 second'
		FROM generate_series(1, 250) i`, code, hashOf("old"))
	if err != nil {
		t.Fatal(err)
	}
	fileReport(t, s, code, "young")
	var total int64
	for {
		n, err := s.PurgeReportContacts(ctx, 90*24*time.Hour, 100)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if n < 100 {
			break
		}
	}
	if total != 250 {
		t.Errorf("erased %d contacts, want the 250 older than 90 days", total)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM reports WHERE contact IS NOT NULL`); n != 1 {
		t.Errorf("%d contacts left, want the young one", n)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM reports`); n != 251 {
		t.Errorf("%d reports left, want all 251", n)
	}
}

// TestReportsMigrationRollsBack: migration 00052 rolls back with a dismissal in the audit log.
func TestReportsMigrationRollsBack(t *testing.T) {
	t.Parallel()
	s := openStore(t, storetest.NewDirectDatabase(t))
	ctx := context.Background()
	code := newContent(t, s, "x", 1)[0]
	fileReport(t, s, code, "r")
	if _, err := s.Dismiss(ctx, hashOf("x"), "fine", operator); err != nil {
		t.Fatal(err)
	}
	migrateBelow(t, s, 52)
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM admin_audit WHERE action = 'dismiss'`); n != 1 {
		t.Errorf("%d dismissals in the audit log after the rollback, want the 1 kept", n)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
}

// TestReportsRaceTakedowns files reports on pastes while operators take them down, blocks
// included, all at once: every report filed (nil) on a paste taken down is closed by it, none is
// left open on a paste that is gone, and every report refused was refused as gone.
func TestReportsRaceTakedowns(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	const pastes, reporters = 40, 6
	codes := newContent(t, s, "raced", pastes/2)
	codes = append(codes, newContent(t, s, "raced too", pastes/2)...)
	var wg sync.WaitGroup
	errs := make(chan error, pastes*reporters)
	for i, code := range codes {
		for r := range reporters {
			wg.Go(func() {
				err := s.FileReport(ctx, store.NewReport{Code: code, Reason: "spam", ReceiptHash: store.HashToken(fmt.Sprint(code, r))})
				if err != nil && !errors.Is(err, store.ErrGone) {
					errs <- err
				}
			})
		}
		wg.Go(func() {
			_, err := s.TakeDown(ctx, store.Takedown{Code: code, Reason: "race", Block: i == pastes-1}, operator)
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM reports WHERE state = 'open'`); n != 0 {
		t.Errorf("%d reports left open on pastes taken down, want none", n)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes`); n != 0 {
		t.Errorf("%d pastes left, want all taken down", n)
	}
	t.Logf("%d reports filed before their paste's takedown, the rest refused as gone",
		storetest.Count(t, s.Pool(), `SELECT count(*) FROM reports`))
	refCountsExact(t, s)
}
