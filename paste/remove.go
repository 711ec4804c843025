package paste

import (
	"cmp"
	"context"
	"log/slog"

	"pastebin/cache"
	"pastebin/store"
)

// Remover runs the flows that remove pastes (docs/design.md, "Delete, burn and view" and
// "Takedown and blocked content"): the owner's delete, a burn, an operator's takedown and block.
// Each is one transaction in the store, then the same step after its commit (afterCommit). It
// never touches S3: the blob deleter removes what the store put in the outbox.
type Remover struct {
	store  *store.Store
	cache  *cache.Cache
	freed  func() // tells the blob deleter that keys wait in the outbox; may be nil
	logger *slog.Logger
}

// NewRemover returns the removal flows over s and c. blobsFreed, unless nil, is called when a
// removal freed a blob, so that the blob deleter does not wait for the next cleanup run.
func NewRemover(s *store.Store, c *cache.Cache, blobsFreed func(), logger *slog.Logger) *Remover {
	return &Remover{store: s, cache: c, freed: blobsFreed, logger: logger}
}

// Delete tombstones the paste for its owner; a retried delete answers nil again, changes nothing in
// the store, and marks the paste gone in the cache again.
func (rm *Remover) Delete(ctx context.Context, code, token string) error {
	if !store.ValidShortCode(code) {
		return store.ErrNotFound
	}
	rel, err := rm.store.DeletePaste(ctx, code, token)
	if err != nil {
		return err
	}
	// A retry marks the paste with the reason it has (an operator's takedown stays one).
	return rm.afterCommit(ctx, []string{code}, cmp.Or(rel.Reason, store.ReasonOwner), rel, false)
}

// takeView takes one view of a view-limited paste (burn after reading is a limit of one) for the
// reader whose transaction gets it; the one that takes the last view moves the paste to DELETED.
// A reader that finds no view left gets a *store.GoneError.
func (rm *Remover) takeView(ctx context.Context, code string) (store.View, error) {
	view, err := rm.store.ConsumeView(ctx, code)
	if err != nil || view.ViewsLeft > 0 {
		return view, err
	}
	// A view-limited paste is never cached (Reader.Body fills the cache, views bypass it), so no
	// replica can serve it: a marker that could not be written only costs other readers a query.
	_ = rm.afterCommit(ctx, []string{code}, store.ReasonBurned, view.Released, false)
	return view, nil
}

// TakeDown runs an operator's takedown. Every paste it took down is marked gone in the cache before
// it returns (invariant 5). A retry takes nothing down and marks the paste again, with the
// reason it has, as a retried owner's delete does: so a takedown answered *UnconfirmedError is
// confirmed by running it again.
func (rm *Remover) TakeDown(ctx context.Context, t store.Takedown, by store.Actor) (store.TakedownResult, error) {
	if !store.ValidShortCode(t.Code) {
		return store.TakedownResult{}, store.ErrNotFound
	}
	res, err := rm.store.TakeDown(ctx, t, by)
	if err != nil {
		return res, err
	}
	if err := rm.afterCommit(ctx, res.Codes, store.TakedownReason(t.Legal), res.Released, true); err != nil {
		return res, err
	}
	if !res.TakenDown && (res.Reason == store.ReasonTakedown || res.Reason == store.ReasonLegal) {
		return res, rm.afterCommit(ctx, []string{t.Code}, res.Reason, store.Released{}, true)
	}
	return res, nil
}

// Block blocks content for an operator, taking down its pastes when asked, as TakeDown does.
func (rm *Remover) Block(ctx context.Context, b store.Block, by store.Actor) (store.BlockResult, error) {
	if b.ContentHash == nil && !store.ValidShortCode(b.Code) {
		return store.BlockResult{}, store.ErrNotFound
	}
	res, err := rm.store.Block(ctx, b, by)
	if err != nil {
		return res, err
	}
	return res, rm.afterCommit(ctx, res.Codes, store.TakedownReason(b.Legal), res.Released, true)
}

// afterCommit runs after a removal committed: the blob deleter is told when a blob was freed, and
// the cache replaces each paste of codes with a marker that says reason (invariant 5). Without the
// marker the removal is not confirmed: another replica may still serve a cached copy, so the
// caller is told (*UnconfirmedError) to send the same request again, which marks them again.
func (rm *Remover) afterCommit(ctx context.Context, codes []string, reason string, rel store.Released, takedown bool) error {
	if len(rel.BlobKeys) > 0 && rm.freed != nil {
		rm.freed()
	}
	if err := rm.cache.MarkAllGone(context.WithoutCancel(ctx), codes, reason); err != nil {
		what := "delete"
		if takedown {
			what = "takedown"
		}
		rm.logger.WarnContext(ctx, what+" committed, cache not told", "pastes", len(codes), "err", err)
		return &UnconfirmedError{Takedown: takedown, Err: err}
	}
	return nil
}
