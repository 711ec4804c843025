package expiry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"pastebin/blob"
	"pastebin/store"
)

// Limits of the check.
const (
	maxExamples      = 100  // entries of each kind kept in a report; the counts are exact
	repairBatch      = 500  // content rows one repair transaction locks
	retryingAttempts = 5    // outbox entries attempted this often are worth a look
	cursorPage       = 1000 // content keys read at a time, as many as S3 lists
	listConcurrency  = 8    // key ranges listed and merged at once
	headConcurrency  = 8    // HEAD requests in flight per range when suspects are looked at again
)

// CheckConfig says what pastebin fsck looks for and whether it repairs.
type CheckConfig struct {
	OrphanGrace  time.Duration // untracked blobs younger than this are uploads in flight, not orphans
	OutboxMaxAge time.Duration // an older outbox entry means the outbox does not drain
	Repair       bool
	Progress     func(checked, total int64) // content rows compared with the bucket so far; may be nil
}

// checkedBucket is what fsck needs of S3.
type checkedBucket interface {
	ListAfter(ctx context.Context, prefix, startAfter string, fn func([]blob.Object) error) error
	Exists(ctx context.Context, key string) (bool, error)
}

// Checker is pastebin fsck: it checks invariants 1 to 3 (docs/design.md, "Invariants") against a live deployment,
// without stopping it, and repairs what can be repaired safely.
type Checker struct {
	store  *store.Store
	blobs  checkedBucket
	cfg    CheckConfig
	logger *slog.Logger
	bounds []string // the key ranges checked side by side, by their lower bounds
}

// NewChecker returns a checker of the deployment behind st and blobs.
func NewChecker(cfg CheckConfig, st *store.Store, blobs checkedBucket, logger *slog.Logger) *Checker {
	return &Checker{store: st, blobs: blobs, cfg: cfg, logger: logger, bounds: rangeBounds()}
}

// CheckReport is what fsck found and, with Repair, what it fixed. Problems lists what is still
// wrong: it is empty exactly when OK.
type CheckReport struct {
	OK        bool               `json:"ok"`
	Problems  []string           `json:"problems"`
	Warnings  []string           `json:"warnings"`
	Repair    bool               `json:"repair"`
	StartedAt time.Time          `json:"started_at"`
	Seconds   float64            `json:"duration_seconds"`
	Content   int64              `json:"content_rows"`
	Pastes    int64              `json:"pastes"` // pastes holding a content reference: all but tombstones
	Refs      RefFindings        `json:"ref_counts"`
	Blobs     BlobFindings       `json:"blobs"`
	Outbox    store.OutboxStatus `json:"outbox"`
}

// RefFindings is invariant 1, and the database's half of invariant 2.
type RefFindings struct {
	Wrong              int                `json:"wrong"`        // ref_count is not the number of pastes
	Unreferenced       int                `json:"unreferenced"` // ref_count 0 and no paste: should be gone
	Examples           []store.RefAnomaly `json:"examples"`
	LiveWithoutContent int64              `json:"live_without_content"`
	Repaired           []store.RefRepair  `json:"repaired"` // --repair: rows set to their recount, under lock
	Settled            int                `json:"settled"`  // --repair: right again when locked (changed meanwhile)
}

// BlobFindings is the bucket's half of invariants 2 and 3.
type BlobFindings struct {
	Listed        int               `json:"listed"`         // objects under the blob prefix
	Missing       int               `json:"missing"`        // content rows whose blob is not in S3
	MissingPastes int64             `json:"missing_pastes"` // live pastes on those
	MissingBlobs  []store.BlobOwner `json:"missing_examples"`
	OrphanStats                     // untracked objects older than the grace period
	OrphanKeys    []string          `json:"orphan_examples"`
	Queued        int               `json:"queued"`    // --repair: orphans put in the outbox
	InFlight      int               `json:"in_flight"` // untracked objects younger than the grace period
	Cleared       int               `json:"cleared"`   // suspects a second look cleared (they changed meanwhile)
}

func (b *BlobFindings) merge(o BlobFindings) {
	b.Listed += o.Listed
	b.Missing += o.Missing
	b.MissingPastes += o.MissingPastes
	b.MissingBlobs = appendUpTo(b.MissingBlobs, o.MissingBlobs)
	b.OrphanStats.merge(o.OrphanStats)
	b.OrphanKeys = appendUpTo(b.OrphanKeys, o.OrphanKeys)
	b.Queued += o.Queued
	b.InFlight += o.InFlight
	b.Cleared += o.Cleared
}

// Check checks every invariant, repairs with cfg.Repair, and returns the report. An error means the
// check could not finish; what it finds wrong is in the report.
func (c *Checker) Check(ctx context.Context) (CheckReport, error) {
	start := time.Now()
	rep := CheckReport{StartedAt: start.UTC(), Repair: c.cfg.Repair}
	// Empty lists rather than null, for scripts reading the JSON.
	rep.Refs.Examples, rep.Refs.Repaired = []store.RefAnomaly{}, []store.RefRepair{}
	rep.Blobs.MissingBlobs, rep.Blobs.OrphanKeys = []store.BlobOwner{}, []string{}
	for _, step := range []func(context.Context, *CheckReport) error{c.checkRefCounts, c.checkBlobs, c.checkOutbox} {
		if err := step(ctx, &rep); err != nil {
			return rep, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.judge(c.cfg)
	return rep, nil
}

// checkRefCounts runs the ref_count check on one snapshot and, with Repair, recounts the suspects
// under their row locks. It runs before the blob check, so content it frees is in the outbox by
// then.
func (c *Checker) checkRefCounts(ctx context.Context, rep *CheckReport) error {
	rc, err := c.store.CheckRefCounts(ctx)
	if err != nil {
		return err
	}
	rep.Content, rep.Pastes, rep.Refs.LiveWithoutContent = rc.Content, rc.Pastes, rc.LiveWithoutContent
	suspects := make([][]byte, 0, len(rc.Anomalies))
	for _, a := range rc.Anomalies {
		if a.RefCount == 0 && a.Pastes == 0 {
			rep.Refs.Unreferenced++
		} else {
			rep.Refs.Wrong++
		}
		if len(rep.Refs.Examples) < maxExamples {
			rep.Refs.Examples = append(rep.Refs.Examples, a)
		}
		suspects = append(suspects, a.Hash)
	}
	if !c.cfg.Repair {
		return nil
	}
	return c.repairRefCounts(ctx, rep, suspects)
}

func (c *Checker) repairRefCounts(ctx context.Context, rep *CheckReport, suspects [][]byte) error {
	for start := 0; start < len(suspects); start += repairBatch {
		batch := suspects[start:min(start+repairBatch, len(suspects))]
		fixed, err := c.store.RepairRefCounts(ctx, batch)
		if err != nil {
			return err
		}
		if len(fixed) > 0 {
			c.logger.WarnContext(ctx, "fsck repaired ref_counts", "rows", len(fixed), "first", fixed[0].Hash.String(),
				"was", fixed[0].Was, "now", fixed[0].Now)
		}
		rep.Refs.Repaired = append(rep.Refs.Repaired, fixed[:min(len(fixed), maxExamples-len(rep.Refs.Repaired))]...)
		rep.Refs.Settled += len(batch) - len(fixed)
	}
	return nil
}

func (c *Checker) checkOutbox(ctx context.Context, rep *CheckReport) error {
	st, err := c.store.OutboxStatus(ctx, retryingAttempts, maxExamples)
	rep.Outbox = st
	return err
}

// judge lists what is still wrong after the check (and the repair), and what only deserves a look.
func (r *CheckReport) judge(cfg CheckConfig) {
	r.Problems, r.Warnings = []string{}, []string{}
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	if r.Refs.Wrong > 0 && !cfg.Repair {
		problem("invariant 1: %d content rows whose ref_count is not their number of pastes", r.Refs.Wrong)
	}
	if r.Refs.Unreferenced > 0 && !cfg.Repair {
		problem("invariant 1: %d content rows at ref_count 0, which should have been deleted", r.Refs.Unreferenced)
	}
	if r.Refs.LiveWithoutContent > 0 {
		problem("invariant 2: %d pastes not deleted have no content row", r.Refs.LiveWithoutContent)
	}
	if r.Blobs.Missing > 0 {
		problem("invariant 2: %d content blobs missing from S3, read by %d live pastes (not repairable: restore the objects)",
			r.Blobs.Missing, r.Blobs.MissingPastes)
	}
	if n := r.Blobs.Orphans - r.Blobs.Queued; n > 0 {
		problem("invariant 3: %d orphan blobs (%d bytes) older than the grace period %s", n, r.Blobs.OrphanBytes, cfg.OrphanGrace)
	}
	if age := time.Duration(r.Outbox.OldestAge * float64(time.Second)); age > cfg.OutboxMaxAge {
		problem("invariant 3: the outbox does not drain: %d blobs, the oldest waiting %s (more than %s)",
			r.Outbox.Size, age.Round(time.Second), cfg.OutboxMaxAge)
	}
	if r.Outbox.Retrying > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d outbox blobs attempted %d times or more", r.Outbox.Retrying, retryingAttempts))
	}
	if r.Outbox.Named > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d outbox blobs are named by a content row, so never deleted", r.Outbox.Named))
	}
	r.OK = len(r.Problems) == 0
}
