package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// viewsColumns reads a paste's view limit and the views it has left, 0 and 0 for none. A row that
// burns after reading from before view limits (migrations/00030_view_limits.sql: burn_after_read
// set, max_views NULL) has one view of one left.
const viewsColumns = `
	CASE WHEN p.burn_after_read THEN coalesce(p.max_views, 1) ELSE 0 END,
	CASE WHEN p.burn_after_read THEN coalesce(p.views_left, 1) ELSE 0 END`

// takeViewSQL takes one view of a live, unexpired view-limited paste and returns its blob key, its
// content hash and the views left after this one. The UPDATE holds the paste's row lock to the end
// of the transaction: a concurrent reader waits, then sees the views this one left (PostgreSQL
// checks the WHERE again on the row it waited for), so each view is taken once and no reader takes
// a view that is not there. A row from before view limits gets its limit of one here.
const takeViewSQL = `
	UPDATE pastes p SET max_views = coalesce(p.max_views, 1), views_left = coalesce(p.views_left, 1) - 1
	FROM content c
	WHERE p.short_code = $1 AND p.burn_after_read AND p.status = 'NOT_EXPIRED'
	  AND coalesce(p.views_left, 1) > 0 AND (p.expires_at IS NULL OR p.expires_at > now())
	  AND c.content_hash = p.content_hash
	RETURNING c.blob_key, p.content_hash, p.views_left`

// View is what a consuming read took: the blob the paste's bytes are in and the views left after
// it. The read that took the last view took the paste too, and Released says what that released.
type View struct {
	BlobKey   string
	ViewsLeft int
	Released  Released
}

// ConsumeView takes one view of a view-limited paste (burn after reading is a limit of one).
// However many readers and replicas call it at once, each view goes to one of them, and the one
// that takes the last moves the paste to DELETED and releases its content in the same transaction
// (invariant 6). A caller that gets a *GoneError took nothing and must serve nothing; the views of
// a paste that is gone, expired or claimed by cleanup are not taken.
func (s *Store) ConsumeView(ctx context.Context, code string) (View, error) {
	var v View
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		v = View{}
		var hash []byte
		err := tx.QueryRow(ctx, takeViewSQL, code).Scan(&v.BlobKey, &hash, &v.ViewsLeft)
		if errors.Is(err, pgx.ErrNoRows) {
			return &GoneError{Reason: ReasonBurned}
		}
		if err != nil || v.ViewsLeft > 0 {
			return err
		}
		v.Released, err = tombstone(ctx, tx, []string{code}, [][]byte{hash}, live, ReasonBurned, perKey)
		if err == nil && len(v.Released.Codes) != 1 {
			err = errors.New("take the last view: the paste did not move to DELETED")
		}
		return err
	})
	if err != nil {
		return View{}, err
	}
	return v, nil
}
