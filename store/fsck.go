package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"pastebin/redact"
)

// HexHash is a content hash that prints, and marshals to JSON, as hex.
type HexHash []byte

func (h HexHash) String() string { return hex.EncodeToString(h) }

// MarshalText writes the hash as hex.
func (h HexHash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// RefAnomaly is a content row that breaks invariant 1: its ref_count is not the number of pastes
// pointing at it, or it is 0 (the transaction that released the last reference should have deleted
// the row).
type RefAnomaly struct {
	Hash     HexHash `json:"content_hash"`
	BlobKey  string  `json:"blob_key"`
	RefCount int64   `json:"ref_count"`
	Pastes   int64   `json:"pastes"`
}

// RefCheck is one consistent look at invariant 1 and at the content side of invariant 2.
type RefCheck struct {
	Content            int64 // content rows
	Pastes             int64 // pastes holding a content reference: every one but tombstones
	Anomalies          []RefAnomaly
	LiveWithoutContent int64 // pastes whose content row does not exist
}

// refAnomaliesSQL counts the references of every content row in one grouped scan of pastes, and
// joins the counts to content both ways: a count with no content row is pastes without content
// (only possible if a constraint was dropped, which is why it is looked for). Pastes with a NULL
// hash land in the NULL group, which joins nothing, for the same reason. Tombstones are rows of
// their own (tombstones), with no reference.
const refAnomaliesSQL = `
	WITH refs AS (
		SELECT content_hash, count(*) AS n FROM pastes
		GROUP BY content_hash
	)
	SELECT c.content_hash IS NOT NULL, coalesce(c.content_hash, r.content_hash),
	       coalesce(c.blob_key, ''), coalesce(c.ref_count, 0), coalesce(r.n, 0)
	FROM content c FULL JOIN refs r ON r.content_hash = c.content_hash
	WHERE c.content_hash IS NULL OR c.ref_count <> coalesce(r.n, 0) OR c.ref_count = 0`

// CheckRefCounts compares every content row's ref_count with the pastes pointing at it, in one
// REPEATABLE READ snapshot. Creates, deletes and cleanup change a ref_count and its pastes in the same
// transaction, so every committed state is exact: a row changing during the check cannot show up
// as a mismatch, as it could if the counts and the ref_counts were read at different moments.
func (s *Store) CheckRefCounts(ctx context.Context) (RefCheck, error) {
	var rc RefCheck
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		// The grouping of a million pastes spills to disk at the default work_mem.
		if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '256MB'`); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM content),
			(SELECT count(*) FROM pastes WHERE content_hash IS NOT NULL)`).Scan(&rc.Content, &rc.Pastes)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, refAnomaliesSQL)
		if err != nil {
			return err
		}
		var hasContent bool
		var a RefAnomaly
		_, err = pgx.ForEachRow(rows, []any{&hasContent, &a.Hash, &a.BlobKey, &a.RefCount, &a.Pastes}, func() error {
			if !hasContent {
				rc.LiveWithoutContent += a.Pastes
				return nil
			}
			a.Hash = append(HexHash(nil), a.Hash...)
			rc.Anomalies = append(rc.Anomalies, a)
			return nil
		})
		return err
	})
	if err != nil {
		return RefCheck{}, fmt.Errorf("check ref counts: %w", err)
	}
	return rc, nil
}

// RefRepair is what RepairRefCounts did to one content row.
type RefRepair struct {
	Hash    HexHash `json:"content_hash"`
	BlobKey string  `json:"blob_key"`
	Was     int64   `json:"was"`
	Now     int64   `json:"now"`
	Freed   bool    `json:"freed"` // no paste was left: the row is deleted and its blob queued for deletion
}

// recountSQL sets the ref_counts of the locked rows $1 to their pastes, counted in one grouped join.
// Rows already right are left alone, except those at zero, which are returned to be freed.
const recountSQL = `
	WITH actual AS (
		SELECT h.hash, count(p.short_code) AS n
		FROM unnest($1::bytea[]) AS h (hash) LEFT JOIN pastes p ON p.content_hash = h.hash
		GROUP BY h.hash
	)
	UPDATE content c SET ref_count = a.n FROM actual a
	WHERE c.content_hash = a.hash AND (c.ref_count <> a.n OR a.n = 0)
	RETURNING c.content_hash, c.blob_key, c.ref_count`

// RepairRefCounts recounts the references of the content rows hashes and fixes the ref_counts that
// are wrong, in one transaction that first locks the rows. The recount is a later statement than
// the lock, so it sees every transaction that changed these rows before: a create takes the row lock
// before inserting its paste, and a delete's tombstone, if it got to the pastes first, is not
// committed and has not decremented yet, so both sides of the count move together. Rows with no
// paste left are deleted and their blobs queued, as the release of the last reference would have.
// It returns the rows it changed; suspects right by the time they were locked are not among them.
func (s *Store) RepairRefCounts(ctx context.Context, hashes [][]byte) ([]RefRepair, error) {
	var fixed []RefRepair
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		was, err := lockContent(ctx, tx, hashes)
		if err != nil || len(was) == 0 {
			return err
		}
		locked := make([][]byte, 0, len(was))
		for h := range was {
			locked = append(locked, []byte(h))
		}
		fixed, err = recount(ctx, tx, locked, was)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("repair ref counts: %w", err)
	}
	return fixed, nil
}

// lockContent locks the content rows hashes that still exist, in hash order (concurrent repairs
// then cannot deadlock each other), and returns their ref_counts by hash.
func lockContent(ctx context.Context, tx pgx.Tx, hashes [][]byte) (map[string]int64, error) {
	rows, err := tx.Query(ctx, lockContentSQL, hashes)
	if err != nil {
		return nil, err
	}
	was := map[string]int64{}
	var hash []byte
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&hash, &n}, func() error {
		was[string(hash)] = n
		return nil
	})
	return was, err
}

func recount(ctx context.Context, tx pgx.Tx, locked [][]byte, was map[string]int64) ([]RefRepair, error) {
	rows, err := tx.Query(ctx, recountSQL, locked)
	if err != nil {
		return nil, err
	}
	var fixed []RefRepair
	var zero [][]byte
	var r RefRepair
	_, err = pgx.ForEachRow(rows, []any{&r.Hash, &r.BlobKey, &r.Now}, func() error {
		r.Hash = append(HexHash(nil), r.Hash...)
		r.Was, r.Freed = was[string(r.Hash)], r.Now == 0
		if r.Freed {
			zero = append(zero, r.Hash)
		}
		fixed = append(fixed, r)
		return nil
	})
	if err != nil || len(zero) == 0 {
		return fixed, err
	}
	_, err = releaseContent(ctx, tx, zero, make([]int64, len(zero)), perKey)
	return fixed, err
}

// ContentKeysAfter returns up to limit blob keys of content rows that sort after after, in byte
// order, the order S3 lists keys in: one page of a walk over the blob_key index, so a long check
// holds no transaction open.
func (s *Store) ContentKeysAfter(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT blob_key FROM content WHERE blob_key COLLATE "C" > $1
		ORDER BY blob_key COLLATE "C" LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list content keys: %w", err)
	}
	return collectStrings(rows, "list content keys")
}

// BlobOwner is a content row, as the owner of a blob, with the pastes that read it.
type BlobOwner struct {
	BlobKey  string  `json:"blob_key"`
	Hash     HexHash `json:"content_hash"`
	RefCount int64   `json:"ref_count"`
	Live     int64   `json:"live_pastes"` // pastes on it, live or claimed by cleanup
	// Pastes names a few of the pastes as logs do (redact.Code), never by their codes, which let
	// anyone read them. blob_key or content_hash finds them all in the database.
	Pastes []string `json:"paste_hashes"`
}

// BlobOwners returns the content rows that name one of keys now, with their pastes.
func (s *Store) BlobOwners(ctx context.Context, keys []string) ([]BlobOwner, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.blob_key, c.content_hash, c.ref_count,
		       (SELECT count(*) FROM pastes p WHERE p.content_hash = c.content_hash),
		       ARRAY(SELECT p.short_code FROM pastes p WHERE p.content_hash = c.content_hash
		             ORDER BY p.short_code LIMIT 5)
		FROM content c WHERE c.blob_key = ANY($1) ORDER BY c.blob_key`, keys)
	if err != nil {
		return nil, fmt.Errorf("find blob owners: %w", err)
	}
	owners, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BlobOwner])
	if err != nil {
		return nil, fmt.Errorf("find blob owners: %w", err)
	}
	for _, o := range owners {
		for i, code := range o.Pastes {
			o.Pastes[i] = redact.Code(code)
		}
	}
	return owners, nil
}

// OutboxEntry is one blob waiting in the outbox.
type OutboxEntry struct {
	BlobKey    string    `json:"blob_key"`
	EnqueuedAt time.Time `json:"enqueued_at"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error"`
}

// OutboxStatus says whether the outbox drains (invariant 3).
type OutboxStatus struct {
	Size       int64         `json:"size"`
	OldestAge  float64       `json:"oldest_age_seconds"` // by the database's clock; 0 when empty
	Retrying   int64         `json:"retrying"`           // entries with at least the given attempts
	Named      int64         `json:"named_by_content"`   // entries a content row names: never handed out
	Held       int64         `json:"held_back"`          // abandoned uploads held for the grace period
	Struggling []OutboxEntry `json:"retrying_examples"`
}

// OutboxStatus reports the outbox: its size, its oldest entry's age, and the entries that have
// been attempted at least attempts times, up to limit of them, most attempted first. An abandoned
// upload held back (EnqueueAbandonedUploads) is not due yet: its age counts from the end of its
// hold, and a content row naming it is its create, committed after all, not an anomaly.
func (s *Store) OutboxStatus(ctx context.Context, attempts, limit int) (OutboxStatus, error) {
	var st OutboxStatus
	err := s.pool.QueryRow(ctx, `
		SELECT count(*), coalesce(extract(epoch FROM now() - min(coalesce(not_before, enqueued_at))
		           FILTER (WHERE coalesce(not_before, enqueued_at) <= now())), 0)::float8,
		       count(*) FILTER (WHERE attempts >= $1), count(*) FILTER (WHERE not_before > now()),
		       (SELECT count(*) FROM blob_outbox d JOIN content c ON c.blob_key = d.blob_key
		        WHERE d.not_before IS NULL)
		FROM blob_outbox`, attempts).Scan(&st.Size, &st.OldestAge, &st.Retrying, &st.Held, &st.Named)
	if err != nil {
		return OutboxStatus{}, fmt.Errorf("read outbox: %w", err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT blob_key, enqueued_at, attempts, last_error FROM blob_deletions
		WHERE attempts >= $1 ORDER BY attempts DESC, blob_key LIMIT $2`, attempts, limit)
	if err != nil {
		return OutboxStatus{}, fmt.Errorf("read outbox: %w", err)
	}
	st.Struggling, err = pgx.CollectRows(rows, pgx.RowToStructByPos[OutboxEntry])
	if err != nil {
		return OutboxStatus{}, fmt.Errorf("read outbox: %w", err)
	}
	return st, nil
}
