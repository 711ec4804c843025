package api

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// maxAdminBody bounds the JSON bodies of the admin API: a reason and a few flags.
const maxAdminBody = 16 << 10

// maxReason bounds an operator's reason, which the audit log keeps.
const maxReason = 1000

// takeDown runs an operator's takedown and what must follow its commit: every paste it took down
// is marked gone in the cache before the answer (invariant 5), and the blob deleter is told. A
// retry marks the paste again, with the reason it has, as a retried owner delete does.
func (ps *pasteService) takeDown(ctx context.Context, t store.Takedown, by store.Actor) (store.TakedownResult, error) {
	if !store.ValidShortCode(t.Code) {
		return store.TakedownResult{}, store.ErrNotFound
	}
	res, err := ps.store.TakeDown(ctx, t, by)
	if err != nil {
		return res, err
	}
	if err := ps.releasedAll(ctx, res.Released, t.Legal); err != nil {
		return res, err
	}
	if !res.TakenDown && (res.Reason == store.ReasonTakedown || res.Reason == store.ReasonLegal) {
		return res, ps.markAllGone(ctx, []string{t.Code}, res.Reason)
	}
	return res, nil
}

// block blocks content for an operator, taking down its pastes when asked, as takeDown does.
func (ps *pasteService) block(ctx context.Context, b store.Block, by store.Actor) (store.BlockResult, error) {
	if b.ContentHash == nil && !store.ValidShortCode(b.Code) {
		return store.BlockResult{}, store.ErrNotFound
	}
	res, err := ps.store.Block(ctx, b, by)
	if err != nil {
		return res, err
	}
	return res, ps.releasedAll(ctx, res.Released, b.Legal)
}

// releasedAll is released for the pastes of a takedown.
func (ps *pasteService) releasedAll(ctx context.Context, rel store.Released, legal bool) error {
	if len(rel.BlobKeys) > 0 && ps.freed != nil {
		ps.freed()
	}
	return ps.markAllGone(ctx, rel.Codes, store.TakedownReason(legal))
}

// markAllGone marks pastes gone in the cache. Unconfirmed, the takedown is answered 503, as an
// owner's delete is: another replica may still serve a cached copy until the retry marks it.
func (ps *pasteService) markAllGone(ctx context.Context, codes []string, reason string) error {
	if err := ps.cache.MarkAllGone(context.WithoutCancel(ctx), codes, reason); err != nil {
		ps.logger.WarnContext(ctx, "takedown committed, cache not told", "pastes", len(codes), "err", err)
		return errDeleteUnconfirmed.withDetail("The paste is taken down, but not every server knows yet. " +
			"Send the same request again shortly.").withRetryAfter(5 * time.Second)
	}
	return nil
}

// takedownRequest is the body of DELETE /admin/pastes/{code}; its fields may come as query
// parameters instead.
type takedownRequest struct {
	Reason string `json:"reason"`
	Legal  bool   `json:"legal"`
	Block  bool   `json:"block"`
}

// takedownJSON is the answer to a takedown.
type takedownJSON struct {
	Code            string  `json:"code"`
	TakenDown       bool    `json:"taken_down"`
	Legal           bool    `json:"legal"`
	ContentHash     *string `json:"content_hash"`
	Blocked         bool    `json:"blocked"`
	PastesTakenDown int     `json:"pastes_taken_down"`
	ContentFreed    int     `json:"content_freed"`
}

// handleAdminTakedown handles DELETE /admin/pastes/{code}: an operator takes a paste down. Retried,
// it answers the same with taken_down false.
func handleAdminTakedown(ps *pasteService, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req takedownRequest
		if err := decodeAdminRequest(r, &req, map[string]*bool{"legal": &req.Legal, "block": &req.Block}, &req.Reason); err != nil {
			writeProblem(w, r, err)
			return
		}
		code := chi.URLParam(r, "code")
		res, err := ps.takeDown(r.Context(), store.Takedown{Code: code, Reason: req.Reason, Legal: req.Legal, Block: req.Block}, by)
		if err != nil {
			writeProblem(w, r, asProblem(r, ps.logger, err))
			return
		}
		writeJSON(w, http.StatusOK, takedownJSON{Code: code, TakenDown: res.TakenDown, Legal: req.Legal,
			ContentHash: hexOrNil(res.ContentHash), Blocked: res.Blocked, PastesTakenDown: len(res.Codes), ContentFreed: res.FreedContent})
	})
}

// blockRequest is the body of POST /admin/blocked: the content by its hash, or as a paste's.
type blockRequest struct {
	ContentHash string `json:"content_hash"`
	Code        string `json:"code"`
	Reason      string `json:"reason"`
	Legal       bool   `json:"legal"`
	TakeDown    bool   `json:"take_down"`
}

// toBlock checks the request and turns it into the store's Block.
func (req blockRequest) toBlock() (store.Block, error) {
	b := store.Block{Code: req.Code, Reason: req.Reason, Legal: req.Legal, TakeDown: req.TakeDown}
	if err := checkReason(req.Reason); err != nil {
		return b, err
	}
	if (req.ContentHash == "") == (req.Code == "") {
		return b, errBadRequest.withDetail("Name the content by content_hash or by a paste's code, not both.")
	}
	if req.ContentHash != "" {
		h, err := store.ParseContentHash(strings.ToLower(req.ContentHash))
		if err != nil {
			return b, errBadRequest.withDetail("content_hash: " + err.Error() + ".")
		}
		b.ContentHash = h
	}
	return b, nil
}

// blockJSON is the answer to a block.
type blockJSON struct {
	ContentHash     string `json:"content_hash"`
	Added           bool   `json:"added"`
	PastesTakenDown int    `json:"pastes_taken_down"`
	ContentFreed    int    `json:"content_freed"`
}

// handleAdminBlock handles POST /admin/blocked: 201 when the content is newly blocked, 200 when it
// was already.
func handleAdminBlock(ps *pasteService, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req blockRequest
		if err := decodeJSONBody(r, &req); err != nil {
			writeProblem(w, r, err)
			return
		}
		b, err := req.toBlock()
		if err == nil {
			var res store.BlockResult
			if res, err = ps.block(r.Context(), b, by); err == nil {
				status := http.StatusOK
				if res.Added {
					status = http.StatusCreated
				}
				writeJSON(w, status, blockJSON{ContentHash: hex.EncodeToString(res.ContentHash), Added: res.Added,
					PastesTakenDown: len(res.Codes), ContentFreed: res.FreedContent})
				return
			}
		}
		writeProblem(w, r, asProblem(r, ps.logger, err))
	})
}

// handleAdminUnblock handles DELETE /admin/blocked/{hash}, with its required reason parameter.
func handleAdminUnblock(ps *pasteService, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash, err := store.ParseContentHash(strings.ToLower(chi.URLParam(r, "hash")))
		if err != nil {
			writeProblem(w, r, errBadRequest.withDetail(err.Error()+"."))
			return
		}
		reason := r.URL.Query().Get("reason")
		if p := checkReason(reason); p != nil {
			writeProblem(w, r, p)
			return
		}
		removed, err := ps.store.Unblock(r.Context(), hash, reason, by)
		if err != nil {
			writeProblem(w, r, asProblem(r, ps.logger, err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"content_hash": hex.EncodeToString(hash), "removed": removed})
	})
}

// handleAdminBlockedList handles GET /admin/blocked: the blocked content, newest first.
func handleAdminBlockedList(ps *pasteService) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, perr := limitParam(r, 100)
		if perr != nil {
			writeProblem(w, r, perr)
			return
		}
		list, err := ps.store.BlockedContent(r.Context(), limit)
		if err != nil {
			writeProblem(w, r, asProblem(r, ps.logger, err))
			return
		}
		if list == nil {
			list = []store.Blocked{}
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, map[string]any{"blocked": list})
	})
}

// auditPage is a page of the audit log and the address of the next, older one.
type auditPage struct {
	Entries []store.AuditEntry `json:"entries"`
	Next    string             `json:"next,omitempty"`
}

// readAuditPage reads the page of the audit log that r's before and limit parameters ask for.
func (ps *pasteService) readAuditPage(r *http.Request, path string) (auditPage, error) {
	limit, perr := limitParam(r, 50)
	if perr != nil {
		return auditPage{}, perr
	}
	var before int64
	if v := r.URL.Query().Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return auditPage{}, errBadRequest.withDetail("before must be the id of an audit entry.")
		}
		before = n
	}
	entries, err := ps.store.Audit(r.Context(), before, limit)
	if err != nil {
		return auditPage{}, err
	}
	p := auditPage{Entries: entries}
	if p.Entries == nil {
		p.Entries = []store.AuditEntry{}
	}
	if len(entries) == limit {
		p.Next = path + "?before=" + strconv.FormatInt(entries[len(entries)-1].ID, 10) + "&limit=" + strconv.Itoa(limit)
	}
	return p, nil
}

// handleAdminAudit handles GET /admin/audit: every admin action, newest first, paged by before.
func handleAdminAudit(ps *pasteService) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := ps.readAuditPage(r, "/admin/audit")
		if err != nil {
			writeProblem(w, r, asProblem(r, ps.logger, err))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, p)
	})
}

// limitParam reads the limit query parameter: 1 to 1000, def when absent.
func limitParam(r *http.Request, def int) (int, *problem) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, errBadRequest.withDetail("limit must be a number from 1 to 1000.")
	}
	return n, nil
}

// decodeAdminRequest reads a takedown's fields from a JSON body, or else from the query: flags by
// name, and the reason, which is required.
func decodeAdminRequest(r *http.Request, v any, flags map[string]*bool, reason *string) *problem {
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		if err := decodeJSONBody(r, v); err != nil {
			return err
		}
	} else {
		q := r.URL.Query()
		*reason = q.Get("reason")
		for name, flag := range flags {
			on, err := parseFlag(q.Get(name))
			if err != nil {
				return errBadRequest.withDetail(name + " must be true or false.")
			}
			*flag = on
		}
	}
	return checkReason(*reason)
}

// decodeJSONBody reads one JSON object with known fields only.
func decodeJSONBody(r *http.Request, v any) *problem {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errBadRequest.withDetail("The body must be one JSON object of the documented fields: " + err.Error() + ".")
	}
	if dec.More() {
		return errBadRequest.withDetail("The body must be one JSON object.")
	}
	return nil
}

// checkReason requires the operator's reason, which the audit log keeps.
func checkReason(reason string) *problem {
	switch {
	case strings.TrimSpace(reason) == "":
		return errBadRequest.withDetail("Give a reason: the audit log keeps it.")
	case len(reason) > maxReason:
		return errBadRequest.withDetail("The reason is longer than " + strconv.Itoa(maxReason) + " bytes.")
	}
	return nil
}

// parseFlag reads a boolean parameter: empty is false.
func parseFlag(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	return strconv.ParseBool(v)
}

func hexOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}
