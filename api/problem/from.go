package problem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"pastebin/api/representation"
	"pastebin/api/request"
	"pastebin/paste"
	"pastebin/store"
)

// From maps any error to the problem the client sees: the one place an error becomes a status.
// Errors it does not know are internal: logged once here with the route, shown to the client as
// "internal error" and nothing more.
func From(r *http.Request, logger *slog.Logger, err error) *Problem {
	if p := answer(err); p != nil {
		return p
	}
	var cut *BodyError
	switch {
	case errors.As(err, &cut):
		logger.WarnContext(r.Context(), "request body cut short", "route", request.RoutePattern(r), "err", cut.Err)
		if cut.Timeout() {
			return BodyTimeout.WithDetail("The request body did not arrive in time; nothing was saved.")
		}
		return BodyIncomplete.WithDetail("The request body ended before it was complete; nothing was saved.")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		logger.WarnContext(r.Context(), "client went away", "route", request.RoutePattern(r), "err", err)
		return ClientGone.WithDetail("The connection closed before the answer.")
	case errors.Is(err, paste.ErrBlobUnavailable):
		logger.WarnContext(r.Context(), "blob store unavailable", "route", request.RoutePattern(r), "err", err)
		return Storage.WithDetail("The paste store is unreachable; nothing was saved. Try again shortly.")
	case errors.Is(err, paste.ErrSignalUnavailable):
		logger.WarnContext(r.Context(), "spam signal unavailable", "route", request.RoutePattern(r), "err", err)
		return Storage.WithDetail("Redis, which counts the spam signal, is unreachable. Try again shortly.")
	}
	logger.ErrorContext(r.Context(), "internal error", "route", request.RoutePattern(r), "method", request.MethodLabel(r), "err", err)
	return Internal.WithDetail("internal error")
}

// answer is the problem of an error that is an answer in itself, worth no log line: the client's
// request, or the state of the paste it asked about. Nil for any other error.
func answer(err error) *Problem {
	var p *Problem
	var tooBig *http.MaxBytesError
	var gone *store.GoneError
	var expiry *paste.ExpiryError
	var invalid *paste.InvalidError
	var unconfirmed *paste.UnconfirmedError
	var byPost *paste.ReadByPostError
	var badKey *paste.CreatorKeyError
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &expiry):
		return BadExpiry.WithDetail(expiry.Detail)
	case errors.As(err, &invalid):
		return BadRequest.WithDetail(invalid.Detail)
	case errors.Is(err, representation.ErrUnsatisfiable):
		return RangeUnsatisfied.WithDetail("No range of the Range header lies within the paste; Content-Range gives its size.")
	case errors.As(err, &byPost):
		return ReadByPost(byPost.Paste, "a POST to its URL answers its bytes.")
	case errors.Is(err, paste.ErrKeyReused):
		return KeyReused.WithDetail("This Idempotency-Key was already used for a different request.")
	case errors.As(err, &unconfirmed):
		return unconfirmedProblem(unconfirmed)
	case errors.As(err, &gone):
		return goneProblem(gone.Reason)
	case errors.Is(err, paste.ErrDetailsTooLong):
		return ReportTooLarge.WithDetail("A report's details are at most " + strconv.Itoa(paste.MaxReportDetails) + " bytes.")
	case errors.Is(err, paste.ErrNoReport):
		return ReportNotFound.WithDetail("No report has this receipt.")
	case errors.As(err, &badKey):
		return CreatorKeyRequired.WithDetail(badKey.Detail)
	case errors.Is(err, store.ErrBlocked):
		return ContentBlocked.WithDetail("This content is blocked by the operators of this service; nothing was stored.")
	case errors.Is(err, store.ErrContentUnknown):
		return ContentUnknown.WithDetail("The paste is gone, and no takedown recorded its content: block its content hash instead.")
	case errors.Is(err, store.ErrGone):
		return Gone.WithDetail("This paste has expired or was deleted.")
	case errors.Is(err, store.ErrNotFound):
		return NotFound.WithDetail("There is no paste with this code.")
	case errors.Is(err, store.ErrForbidden):
		return Forbidden.WithDetail("The token does not match this paste's delete token.")
	case errors.As(err, &tooBig):
		return TooLarge.WithDetail("The paste is larger than " + strconv.FormatInt(tooBig.Limit, 10) + " bytes.")
	}
	return nil
}

// ReadByPost is the answer to a GET or HEAD of a paste that only a consuming POST reads
// (paste.OpenToGet): one type for a paste that burns after reading, another for a larger view limit.
// how says how to read it. It never holds the paste's content.
func ReadByPost(p store.Paste, how string) *Problem {
	if p.BurnAfterRead() {
		return BurnAfterReading.WithDetail("This paste burns after reading, so no GET returns it. Read it once with a POST: " + how)
	}
	return ViewLimited.WithDetail(fmt.Sprintf("This paste has a view limit (%d of %d views left), so no GET returns it. "+
		"Each POST reads it and takes one view: %s", p.ViewsLeft, p.MaxViews, how))
}

// goneProblem says why a paste is gone: an operator's takedown has its own type, and a legal one
// its own status (451, RFC 7725), so clients and people can tell it from an expiry or a delete.
func goneProblem(reason string) *Problem {
	switch reason {
	case store.ReasonTakedown:
		return TakenDown.WithDetail("An operator of this service took this paste down.")
	case store.ReasonLegal:
		return LegalTakedown.WithDetail("An operator of this service took this paste down for legal reasons.")
	case store.ReasonOwner:
		return Gone.WithDetail("This paste was deleted by its owner.")
	case store.ReasonBurned:
		return Gone.WithDetail("This paste was burned after reading.")
	}
	return Gone.WithDetail("This paste has expired.")
}

// unconfirmedProblem answers a removal that committed while the cache could not be told: the
// client sends the same request again, which marks the pastes again (paste.Remover).
func unconfirmedProblem(e *paste.UnconfirmedError) *Problem {
	detail := "The paste is deleted, but not every server knows yet. Send the same request again shortly; it answers 204 once they do."
	if e.Takedown {
		detail = "The paste is taken down, but not every server knows yet. Send the same request again shortly."
	}
	return DeleteUnconfirmed.WithDetail(detail).WithRetryAfter(5 * time.Second)
}

// BodyError is a request body that did not arrive: cut short (the client hung up, or sent less
// than it declared) or too slow (the server's read timeout). Either way it is the client's doing.
type BodyError struct{ Err error }

func (e *BodyError) Error() string { return "request body: " + e.Err.Error() }
func (e *BodyError) Unwrap() error { return e.Err }

// Timeout reports whether the body stopped at the server's read timeout.
func (e *BodyError) Timeout() bool {
	var ne net.Error
	return errors.As(e.Err, &ne) && ne.Timeout()
}
