package paste

import (
	"context"
	"errors"
	"io"

	"pastebin/blob/codec"
	"pastebin/store"
)

// CaseAction is an operator's decision on a case of reports: take its pastes down (Legal: for
// legal reasons, answered 451), and with Block block its content too, which takes down every
// paste of it, reported or not.
type CaseAction struct {
	Reason       string
	Legal, Block bool
}

// CaseResult is what a decision on a case did.
type CaseResult struct {
	PastesTakenDown int
	ReportsClosed   int64
	Blocked         bool
}

// Cases runs operators' decisions on cases of reports: each closes the reports it answers in the
// transaction of its takedown, block or dismissal, with its audit entry.
type Cases struct {
	store   *store.Store
	remover *Remover
}

// NewCases returns the decisions on cases over s, taking pastes down through rm.
func NewCases(s *store.Store, rm *Remover) *Cases { return &Cases{store: s, remover: rm} }

// TakeDown takes down the pastes of the case of content hash. With a.Block, one transaction blocks
// the content, takes down every paste of it and closes every open report of it. Without, each
// paste with open reports is taken down in a transaction of its own that closes its reports: a
// failure leaves the others done, and the same decision again finishes the rest.
func (cs *Cases) TakeDown(ctx context.Context, hash []byte, a CaseAction, by store.Actor) (CaseResult, error) {
	if a.Block {
		res, err := cs.remover.Block(ctx, store.Block{ContentHash: hash, Reason: a.Reason, Legal: a.Legal, TakeDown: true}, by)
		return CaseResult{PastesTakenDown: len(res.Codes), ReportsClosed: res.ReportsClosed, Blocked: true}, err
	}
	c, err := cs.store.OpenCase(ctx, hash)
	if err != nil {
		return CaseResult{}, err
	}
	var out CaseResult
	for _, code := range c.Codes { // a case's pastes are few: copies of one content that were reported
		res, err := cs.remover.TakeDown(ctx, store.Takedown{Code: code, Reason: a.Reason, Legal: a.Legal}, by)
		if err != nil && !errors.Is(err, store.ErrNotFound) { // a tombstone purged since: nothing to take down
			return out, err
		}
		out.PastesTakenDown += len(res.Codes)
		out.ReportsClosed += res.ReportsClosed
	}
	return out, nil
}

// Dismiss closes the open reports of the content hash as dismissed, with the audit entry.
func (cs *Cases) Dismiss(ctx context.Context, hash []byte, reason string, by store.Actor) (CaseResult, error) {
	n, err := cs.store.Dismiss(ctx, hash, reason, by)
	return CaseResult{ReportsClosed: n}, err
}

// Preview is the start of a paste's text for an operator judging a report.
type Preview struct {
	Paste     store.Paste
	Text      []byte // the first bytes of the original content; nil for an encrypted paste
	Truncated bool
}

// Preview reads the first max bytes of the live paste code for an operator. Unlike every reader's
// path it reads a view-limited paste too, and takes no view: nothing is consumed, and nothing is
// cached. An encrypted paste's bytes mean nothing to the server, and are not read.
func (rd *Reader) Preview(ctx context.Context, code string, max int64) (Preview, error) {
	if !store.ValidShortCode(code) {
		return Preview{}, store.ErrNotFound
	}
	p, err := rd.store.Paste(ctx, code)
	if err != nil || p.Encryption != "" {
		return Preview{Paste: p}, err
	}
	enc, err := codec.ParseEncoding(p.Encoding)
	if err != nil {
		return Preview{}, err
	}
	stored, err := rd.fetch(ctx, p)
	if err != nil {
		return Preview{}, err
	}
	defer stored.Close()
	body, err := rd.codec.NewReader(stored, enc, p.Size)
	if err != nil {
		return Preview{}, err
	}
	defer body.Close()
	text, err := io.ReadAll(io.LimitReader(body, max))
	if err != nil {
		return Preview{}, errors.Join(ErrBlobUnavailable, err)
	}
	return Preview{Paste: p, Text: text, Truncated: p.Size > int64(len(text))}, nil
}
