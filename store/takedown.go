package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Reasons an operator took a paste down. Readers of a legal takedown are answered 451.
const (
	ReasonTakedown = "takedown"
	ReasonLegal    = "legal"
)

// Errors of takedowns and blocked content.
var (
	ErrBlocked        = errors.New("this content is blocked")
	ErrContentUnknown = errors.New("the paste is gone and its content is no longer known")
)

// TakedownReason is the tombstone reason of an operator's removal.
func TakedownReason(legal bool) string {
	if legal {
		return ReasonLegal
	}
	return ReasonTakedown
}

// Takedown is an operator's removal of one paste.
type Takedown struct {
	Code   string
	Reason string // why, for the audit log
	Legal  bool   // readers are told the paste is unavailable for legal reasons (451)
	Block  bool   // also block its content, which takes down every paste that shares it
}

// TakedownResult is what a takedown did.
type TakedownResult struct {
	TakenDown   bool   // this call moved the paste to DELETED; false: it was gone already
	ContentHash []byte // the paste's content; nil when it was gone already and nothing recorded it
	Blocked     bool   // the content is blocked (by this call or before)
	// ReportsClosed counts the open reports this call closed as actioned: the paste's, or with
	// Block its content's.
	ReportsClosed int64
	Released      // every paste this call took down, and the content and blobs it freed
}

// TakeDown removes a paste for an operator: the owner's delete with another reason (docs/design.md, "Takedown and blocked content"), so
// the same tombstone transition releases the same one reference. A paste cleanup has claimed is
// taken down too (its readers must see the takedown's reason, 451 for a legal one), and the
// claim's finish then finds it DELETED and leaves it alone: still one release. With Block, the
// paste's content is blocked and every paste on it not yet deleted taken down, this one included.
// The audit entry is written in the same transaction. A retry changes nothing and answers
// TakenDown false.
func (s *Store) TakeDown(ctx context.Context, t Takedown, by Actor) (TakedownResult, error) {
	var res TakedownResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if t.Block {
			res, err = takeDownAndBlock(ctx, tx, t, by)
		} else {
			res.ContentHash, res.Released, err = removeLive(ctx, tx, t.Code, TakedownReason(t.Legal), liveOrClaimed, nil)
			res.TakenDown = len(res.Codes) > 0
		}
		if err != nil {
			return err
		}
		if res.ContentHash == nil {
			res.ContentHash, err = auditedContent(ctx, tx, t.Code)
			if err != nil {
				return err
			}
		}
		if res.ReportsClosed, err = closeTakedownReports(ctx, tx, t, res.ContentHash, by); err != nil {
			return err
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionTakedown, Code: t.Code, ContentHash: res.ContentHash,
			Reason: t.Reason, Detail: map[string]any{"legal": t.Legal, "block": t.Block, "taken_down": res.TakenDown,
				"pastes": len(res.Codes), "content_freed": res.FreedContent, "reports_closed": res.ReportsClosed}})
	})
	return res, err
}

// closeTakedownReports closes, as actioned, the open reports a takedown answers: the paste's, or
// with a block every report of its content.
func closeTakedownReports(ctx context.Context, tx pgx.Tx, t Takedown, hash []byte, by Actor) (int64, error) {
	if t.Block {
		return closeReports(ctx, tx, ReportActioned, ActionBlock, by, nil, hash)
	}
	return closeReports(ctx, tx, ReportActioned, TakedownReason(t.Legal), by, []string{t.Code}, nil)
}

func takeDownAndBlock(ctx context.Context, tx pgx.Tx, t Takedown, by Actor) (TakedownResult, error) {
	hash, err := contentOf(ctx, tx, t.Code)
	if err != nil {
		return TakedownResult{}, err
	}
	b, err := blockContent(ctx, tx, Block{ContentHash: hash, Reason: t.Reason, Legal: t.Legal, TakeDown: true}, by)
	if err != nil {
		return TakedownResult{}, err
	}
	return TakedownResult{TakenDown: slices.Contains(b.Codes, t.Code), ContentHash: hash, Blocked: true, Released: b.Released}, nil
}

// contentOf is the content hash of the paste code: its own while it is not deleted, else the one
// the audit log recorded when an operator took it down. It locks nothing: the block's locks come
// after, in the order every removal takes them (blockContent).
func contentOf(ctx context.Context, tx pgx.Tx, code string) ([]byte, error) {
	var hash []byte
	var removed bool
	err := tx.QueryRow(ctx, `
		(SELECT content_hash, false FROM pastes WHERE short_code = $1)
		UNION ALL
		(SELECT NULL, true FROM tombstones WHERE short_code = $1)
		LIMIT 1`, code).Scan(&hash, &removed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil || !removed {
		return hash, err
	}
	if hash, err = auditedContent(ctx, tx, code); err == nil && hash == nil {
		err = ErrContentUnknown
	}
	return hash, err
}

// Block is an operator's block of some content: given by its hash, or as the content of a paste.
type Block struct {
	ContentHash []byte
	Code        string // used when ContentHash is nil
	Reason      string
	Legal       bool
	TakeDown    bool // also take down every paste of the content not yet deleted, claimed by cleanup or not
}

// BlockResult is what a block did.
type BlockResult struct {
	ContentHash []byte
	Added       bool // false: the content was blocked already
	// ReportsClosed counts the open reports of the content this call closed as actioned (with
	// TakeDown only).
	ReportsClosed int64
	Released      // the pastes taken down, and the content and blobs freed
}

// Block blocks content: from then on a create of it is refused (ErrBlocked) and writes nothing.
// With TakeDown, every paste on it not yet deleted is taken down in the same transaction, by one
// set-based tombstone. The audit entry is written in that transaction too.
func (s *Store) Block(ctx context.Context, b Block, by Actor) (BlockResult, error) {
	var res BlockResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if b.ContentHash == nil {
			hash, err := contentOf(ctx, tx, b.Code)
			if err != nil {
				return err
			}
			b.ContentHash = hash
		}
		var err error
		if res, err = blockContent(ctx, tx, b, by); err != nil {
			return err
		}
		if b.TakeDown { // a block alone leaves the reported pastes up: their reports stay open
			if res.ReportsClosed, err = closeReports(ctx, tx, ReportActioned, ActionBlock, by, nil, b.ContentHash); err != nil {
				return err
			}
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionBlock, Code: b.Code, ContentHash: b.ContentHash,
			Reason: b.Reason, Detail: map[string]any{"legal": b.Legal, "take_down": b.TakeDown, "added": res.Added,
				"pastes": len(res.Codes), "content_freed": res.FreedContent, "reports_closed": res.ReportsClosed}})
	})
	return res, err
}

// blockContent adds b.ContentHash to the blocked content and, with b.TakeDown, tombstones every
// paste on it not yet deleted, those cleanup has claimed included (see TakeDown). It first takes
// the content's block lock exclusively, which waits for the creates of that content in flight
// (they hold it shared, see takeAndInsert): the tombstone below then sees every paste they made, and
// every later create sees the block. Then it locks the pastes, in code order, and releases the
// content after them: the order of every removal (tombstone), so that none deadlocks with a block.
func blockContent(ctx context.Context, tx pgx.Tx, b Block, by Actor) (BlockResult, error) {
	res := BlockResult{ContentHash: b.ContentHash}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, blockLockClass, blockLockKey(b.ContentHash)); err != nil {
		return res, fmt.Errorf("lock content for a block: %w", err)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO blocked_content (content_hash, legal, reason, actor) VALUES ($1, $2, $3, $4)
		ON CONFLICT (content_hash) DO NOTHING`, b.ContentHash, b.Legal, b.Reason, by.Name)
	if err != nil {
		return res, fmt.Errorf("block content: %w", err)
	}
	res.Added = tag.RowsAffected() == 1
	if !b.TakeDown {
		return res, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT short_code FROM pastes WHERE content_hash = $1 AND status IN ('NOT_EXPIRED', 'DELETION_IN_PROGRESS')
		ORDER BY short_code FOR UPDATE`, b.ContentHash)
	if err != nil {
		return res, fmt.Errorf("find the pastes of blocked content: %w", err)
	}
	codes, err := collectStrings(rows, "find the pastes of blocked content")
	if err != nil || len(codes) == 0 {
		return res, err
	}
	hashes := make([][]byte, len(codes))
	for i := range hashes {
		hashes[i] = b.ContentHash
	}
	res.Released, err = tombstone(ctx, tx, codes, hashes, liveOrClaimed, TakedownReason(b.Legal), perKey)
	return res, err
}

// Unblock lets content be stored again. It answers whether the content was blocked. Pastes taken
// down stay down.
func (s *Store) Unblock(ctx context.Context, hash []byte, reason string, by Actor) (bool, error) {
	var removed bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM blocked_content WHERE content_hash = $1`, hash)
		if err != nil {
			return fmt.Errorf("unblock content: %w", err)
		}
		removed = tag.RowsAffected() == 1
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionUnblock, ContentHash: hash, Reason: reason,
			Detail: map[string]any{"removed": removed}})
	})
	return removed, err
}

// Blocked is one blocked content.
type Blocked struct {
	ContentHash string    `json:"content_hash"` // hex
	Legal       bool      `json:"legal"`
	Reason      string    `json:"reason"`
	Actor       string    `json:"actor"`
	CreatedAt   time.Time `json:"created_at"`
}

// BlockedContent lists up to limit blocked contents, newest first.
func (s *Store) BlockedContent(ctx context.Context, limit int) ([]Blocked, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT encode(content_hash, 'hex'), legal, reason, actor, created_at FROM blocked_content
		ORDER BY created_at DESC, content_hash LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list blocked content: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Blocked])
	if err != nil {
		return nil, fmt.Errorf("list blocked content: %w", err)
	}
	return list, nil
}

// blockLockClass is the first key of the advisory locks that order blocks and creates of the same
// content; the two-key form keeps them apart from every one-key advisory lock (migrations, tests).
const blockLockClass int32 = 0x626c6b // "blk"

// blockLockKey is the second key: the first bytes of the content hash. Two contents sharing it only
// make a block and an unrelated create wait for each other.
func blockLockKey(hash []byte) int32 {
	if len(hash) < 4 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(hash[:4]))
}

// ParseContentHash reads a content hash written as 64 hex digits.
func ParseContentHash(s string) ([]byte, error) {
	h, err := hex.DecodeString(s)
	if err != nil || len(h) != 32 {
		return nil, errors.New("a content hash is 64 hex digits (its SHA-256)")
	}
	return h, nil
}
