package paste

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"pastebin/store"
)

// Limits of a report's fields.
const (
	MaxReportDetails = 4000 // bytes of details
	MaxReportContact = 320  // bytes of a contact address (RFC 5321's longest address is 254)
)

// ErrDetailsTooLong is a report whose details are longer than MaxReportDetails bytes.
var ErrDetailsTooLong = errors.New("report details too long")

// Report is a notice about a paste from anyone: the API's and the form's alike.
type Report struct {
	Reason  string // one of store.ReportReasons
	Details string
	Contact string // optional
}

// Tidy checks and tidies a report: an *InvalidError for a reason not on the list or a field that is
// not text, ErrDetailsTooLong for details past the limit.
func (r *Report) Tidy() error {
	r.Reason = strings.TrimSpace(r.Reason)
	r.Details = strings.TrimSpace(strings.ReplaceAll(r.Details, "\r\n", "\n"))
	r.Contact = strings.TrimSpace(r.Contact)
	switch {
	case !slices.Contains(store.ReportReasons, r.Reason):
		return &InvalidError{"reason must be one of " + strings.Join(store.ReportReasons, ", ") + "."}
	case !text(r.Details):
		return &InvalidError{"details must be text (UTF-8, no control characters but line breaks and tabs)."}
	case len(r.Details) > MaxReportDetails:
		return ErrDetailsTooLong
	case !printable(r.Contact) || len(r.Contact) > MaxReportContact:
		return &InvalidError{"contact must be one line of printable text of at most 320 bytes, such as an email address."}
	}
	return nil
}

// text reports whether s is text PostgreSQL keeps as it is: valid UTF-8 without NUL, and without
// control characters but line breaks and tabs.
func text(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && r != '\n' && r != '\t'
	})
}

// Reporter files abuse reports and answers their receipts (docs/design.md, "Abuse reports").
type Reporter struct{ store *store.Store }

// NewReporter returns the report flow over s.
func NewReporter(s *store.Store) *Reporter { return &Reporter{store: s} }

// File records r on the live paste code and returns its receipt: random, shown only now, kept
// only as its SHA-256. It never reads the paste's bytes nor takes a view; an unknown paste answers
// store.ErrNotFound and a gone one a *store.GoneError, as its reader is answered.
func (rp *Reporter) File(ctx context.Context, code string, r Report) (string, error) {
	if err := r.Tidy(); err != nil {
		return "", err
	}
	if !store.ValidShortCode(code) {
		return "", store.ErrNotFound
	}
	receipt, err := newToken()
	if err != nil {
		return "", err
	}
	err = rp.store.FileReport(ctx, store.NewReport{Code: code, Reason: r.Reason, Details: r.Details,
		Contact: r.Contact, ReceiptHash: store.HashToken(receipt)})
	return receipt, err
}

// ErrNoReport is a receipt no report has.
var ErrNoReport = errors.New("no report has this receipt")

// Status answers the state of the report of receipt, or ErrNoReport.
func (rp *Reporter) Status(ctx context.Context, receipt string) (store.ReportStatus, error) {
	if len(receipt) != TokenLength {
		return store.ReportStatus{}, ErrNoReport
	}
	st, err := rp.store.ReportStatus(ctx, store.HashToken(receipt))
	if errors.Is(err, store.ErrNotFound) {
		return st, ErrNoReport
	}
	return st, err
}
