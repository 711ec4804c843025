package api

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"pastebin/paste"
	"pastebin/store"
)

// pasteService holds the paste flows (package paste) and what the handlers answer with.
type pasteService struct {
	creator  *paste.Creator
	reader   *paste.Reader
	consumer *paste.Consumer
	remover  *paste.Remover
	store    *store.Store
	logger   *slog.Logger
	cfg      Config
	now      func() time.Time
	web      *webUI // the browser pages, which errors are shown as when a browser asks
	limits   *limits
}

// delete runs the owner's delete of paste.Remover for a client, which is refused before its token
// is checked once it sent too many wrong tokens.
func (ps *pasteService) delete(ctx context.Context, code, token string) error {
	if retry, over := ps.limits.failures.exhausted(ctx); over {
		ps.limits.refused.WithLabelValues("delete_failures").Inc()
		return rateLimited(ps.cfg.DeleteFailureRate, "failed deletes", retry)
	}
	err := ps.remover.Delete(ctx, code, token)
	if errors.Is(err, store.ErrForbidden) {
		ps.limits.failures.failed(ctx)
	}
	return err
}
