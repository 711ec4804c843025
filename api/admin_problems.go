package api

import (
	"net/http"

	"pastebin/store"
)

// The problems of takedowns, blocked content and the console. Their names are part of the contract
// (openapi.yaml).
var (
	errTakenDown      = &problem{status: http.StatusGone, name: "taken-down", title: "Paste taken down"}
	errLegalTakedown  = &problem{status: http.StatusUnavailableForLegalReasons, name: "unavailable-for-legal-reasons", title: "Unavailable for legal reasons"}
	errContentBlocked = &problem{status: http.StatusUnavailableForLegalReasons, name: "content-blocked", title: "Content blocked"}
	errContentUnknown = &problem{status: http.StatusConflict, name: "content-unknown", title: "Content no longer known"}
	errSignInRequired = &problem{status: http.StatusUnauthorized, name: "sign-in-required", title: "Sign in first"}
	errCrossSite      = &problem{status: http.StatusForbidden, name: "cross-site-request", title: "Cross-site request refused"}
)

// adminProblems are listed at /problems with the others.
var adminProblems = []*problem{errTakenDown, errLegalTakedown, errContentBlocked, errContentUnknown, errSignInRequired, errCrossSite}

// goneProblem says why a paste is gone: an operator's takedown has its own type, and a legal one
// its own status (451, RFC 7725), so clients and people can tell it from an expiry or a delete.
func goneProblem(reason string) *problem {
	switch reason {
	case store.ReasonTakedown:
		return errTakenDown.withDetail("An operator of this service took this paste down.")
	case store.ReasonLegal:
		return errLegalTakedown.withDetail("An operator of this service took this paste down for legal reasons.")
	}
	return errGone.withDetail(goneDetail(reason))
}

var (
	blockedProblem        = errContentBlocked.withDetail("This content is blocked by the operators of this service; nothing was stored.")
	contentUnknownProblem = errContentUnknown.withDetail("The paste is gone, and no takedown recorded its content: block its content hash instead.")
)
