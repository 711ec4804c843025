package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"pastebin/api/admin"
	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/api/site"
	"pastebin/api/web"
	"pastebin/store"
)

// routes lists the whole HTTP surface: the middleware every request passes, then every route.
func routes(cfg Config, deps Deps, s *server) http.Handler {
	r := chi.NewRouter()
	r.Use(request.AssignIDs, request.IdentifyClients(cfg.TrustedProxies, cfg.ClientIPHeader),
		observeRequests(deps.Logger, newHTTPMetrics(deps.Registry), deps.UserLatency), recoverPanics(deps.Logger, s.site.Error),
		securityHeaders, strictTransport(cfg.HSTSMaxAge), limitHeaderSize(cfg.MaxHeaderBytes, s.site.Error),
		refuseUnknownMethods(s.site.Error), refuseCrossSite(cfg.BaseURL, answerCrossSite(s.site)),
		// HEAD is allowed wherever GET is (RFC 9110, section 9.1): a HEAD with no route of its own
		// runs the GET handler, whose body net/http drops, so it answers exactly GET's headers.
		middleware.GetHead)
	notFound := func(w http.ResponseWriter, req *http.Request) {
		s.site.Error(w, req, problem.RouteNotFound.WithDetail("There is nothing at "+req.URL.Path+"."))
	}
	r.NotFound(notFound)
	refuse := refuseMethod(r, s.site, notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		refuse(w, req, req.Method+" is not allowed on "+req.URL.Path+".")
	})

	r.Method(http.MethodGet, "/healthz", handleHealthz())
	r.Method(http.MethodGet, "/readyz", handleReadyz(deps))
	if cfg.MetricsElsewhere {
		r.Get("/metrics", notFound) // not a paste code either
	} else {
		r.Method(http.MethodGet, "/metrics", MetricsHandler(deps.Registry))
	}
	r.Method(http.MethodGet, "/openapi.yaml", handleOpenAPI(cfg.OpenAPISpec))
	r.Method(http.MethodGet, "/problems", problem.HandleTypes())
	r.Method(http.MethodGet, "/problems/{name}", problem.HandleTypes())
	r.Method(http.MethodGet, "/static/{hash}/{name}", s.site.HandleStatic())
	r.Route("/admin", func(r chi.Router) { adminRoutes(r, cfg, deps, s) })
	pasteRoutes(r, cfg, deps.Logger, s, refuse)
	return r
}

// pasteRoutes are the pastes' addresses: the create form and the curl and JSON creates, each
// paste's page, text and metadata, its consuming POST and its deletes, and haste-server's API
// (haste.go). Where a browser and curl share an address, byAccept or either tells them apart.
func pasteRoutes(r chi.Router, cfg Config, logger *slog.Logger, s *server, refuse refuseFunc) {
	r.Method(http.MethodGet, "/", byAccept(web.HandleIndex(s.pages, s.reader), handleUsage(s.site, cfg.Expiry, cfg.CreateAccess)))
	r.Method(http.MethodGet, "/mine", web.HandleMine(s.pages))
	creates := r.With(s.limits.guardCreate(s.site.Error)) // per-client rate, then a bounded upload slot
	createCurl := handlePasteCreateCurl(s.site, s.creator, cfg.MaxPasteBytes)
	createForm := web.HandleCreate(s.pages, s.creator, webFormDecoder(cfg.MaxPasteBytes))
	creates.Method(http.MethodPost, "/", either(isWebForm, createForm, createCurl))
	creates.Method(http.MethodPut, "/{name}", createCurl)
	creates.Method(http.MethodPost, "/api/v1/pastes", handlePasteCreateJSON(s.site, s.creator, cfg.MaxPasteBytes))
	creates.Method(http.MethodPost, "/documents", handleHasteCreate(s.site, s.creator, cfg.MaxPasteBytes)) // haste.go
	r.Method(http.MethodGet, "/documents/{key}", handleHasteRead(s.site, s.reader))
	r.Method(http.MethodGet, "/api/v1/pastes/{code}", handlePasteMeta(s.site, s.reader))
	r.Method(http.MethodDelete, "/api/v1/pastes/{code}", handlePasteDelete(s.site, s.deleter))
	text := handlePasteText(s.site, s.reader, s.reps, logger)
	consume := handlePasteConsume(s.site, s.pages, s.consumer, s.reps, logger, refuse, fromPageButton)
	r.Method(http.MethodGet, "/raw/{code}", redirectExtension(text))
	r.Method(http.MethodPost, "/raw/{code}", consume)
	r.Method(http.MethodGet, "/{code}", redirectExtension(byAccept(web.HandlePaste(s.pages, s.reader), text)))
	r.Method(http.MethodPost, "/{code}", consume)
	r.Method(http.MethodDelete, "/{code}", handlePasteDelete(s.site, s.deleter))
	r.Method(http.MethodPost, "/{code}/burn", handlePasteConsume(s.site, s.pages, s.consumer, s.reps, logger, refuse, alwaysPage))
	r.Method(http.MethodPost, "/{code}/delete", web.HandleDelete(s.site, s.deleter))
	reportRoutes(r, s)
}

// reportRoutes are the abuse reports' addresses: a paste page's report form, its JSON twin, and a
// receipt's state. Filing a report counts against the client's report rate.
func reportRoutes(r chi.Router, s *server) {
	files := r.With(s.limits.limitReports(s.site.Error))
	r.Method(http.MethodGet, "/{code}/report", web.HandleReportPage(s.pages, s.reader))
	files.Method(http.MethodPost, "/{code}/report", web.HandleReport(s.pages, s.reporter))
	files.Method(http.MethodPost, "/api/v1/pastes/{code}/reports", handleReportCreate(s.site, s.reporter))
	r.Method(http.MethodGet, "/api/v1/reports/{id}", handleReportStatus(s.site, s.reporter))
}

// adminRoutes are /admin: the JSON admin API, where operators trigger and watch cleanup, take
// pastes down and block content with the admin token as a bearer token (bearer), and the console,
// the same in a browser behind a session (signedIn). Three addresses serve both, told apart by
// admin.ForConsole. Without a configured admin token every route answers that the admin API is off.
func adminRoutes(r chi.Router, cfg Config, deps Deps, s *server) {
	bearer, c, signedIn := s.auth.requireAdmin, s.console, s.console.SignedIn
	by, log, st := store.TokenActor(cfg.AdminTokenHash, store.ViaAPI), deps.Logger, deps.Store
	r.With(bearer).Method(http.MethodPost, "/cleanup", admin.HandleCleanupStart(log, st, deps.Cleanup, by))
	r.With(bearer).Method(http.MethodGet, "/cleanup/runs", admin.HandleCleanupRuns(log, st))
	r.With(bearer).Method(http.MethodGet, "/cleanup/runs/{id}", admin.HandleCleanupRun(log, st))
	r.With(bearer).Method(http.MethodGet, "/cleanup/backlog", admin.HandleCleanupBacklog(log, st))
	r.With(bearer).Method(http.MethodDelete, "/pastes/{code}", admin.HandleTakedown(log, s.remover, by))
	r.With(bearer).Method(http.MethodDelete, "/blocked/{hash}", admin.HandleUnblock(log, st, by))
	r.Method(http.MethodGet, "/blocked", either(admin.ForConsole,
		signedIn(admin.HandleBlockedPage(c, st)), bearer(admin.HandleBlockedList(log, st))))
	r.Method(http.MethodPost, "/blocked", either(admin.ForConsole,
		signedIn(admin.HandleBlockForm(c, st, s.remover)), bearer(admin.HandleBlock(log, s.remover, by))))
	r.Method(http.MethodGet, "/content/hot", either(admin.ForConsole,
		signedIn(admin.HandleHotPage(c, s.spam)), bearer(admin.HandleHotList(log, s.spam))))
	r.Method(http.MethodPost, "/content/hot", signedIn(admin.HandleHotBlockForm(c, s.spam, s.remover)))
	r.Method(http.MethodGet, "/audit", either(admin.ForConsole, signedIn(admin.HandleAuditPage(c, st)), bearer(admin.HandleAudit(log, st))))
	r.Method(http.MethodGet, "/reports", either(admin.ForConsole, signedIn(admin.HandleReportsPage(c, st)), bearer(admin.HandleReports(log, st))))
	r.Method(http.MethodPost, "/reports/{hash}/takedown", either(admin.ForConsole,
		signedIn(admin.HandleCaseTakedownForm(c, st, s.cases)), bearer(admin.HandleCaseTakedown(log, s.cases, by))))
	r.Method(http.MethodPost, "/reports/{hash}/dismiss", either(admin.ForConsole,
		signedIn(admin.HandleCaseDismissForm(c, st, s.cases)), bearer(admin.HandleCaseDismiss(log, s.cases, by))))
	r.Method(http.MethodGet, "/pastes/{code}/preview", signedIn(admin.HandlePreviewPage(c, s.reader)))
	keyRoutes(r, cfg, deps, s)

	health := func(ctx context.Context) map[string]string { return checkReadiness(ctx, readinessChecks(deps)) }
	r.Method(http.MethodGet, "/", signedIn(admin.HandleOverviewPage(c, st, health, deps.Cleanup)))
	r.Method(http.MethodGet, "/sign-in", c.Enabled(admin.HandleSignInPage(c)))
	r.Method(http.MethodPost, "/sign-in", c.Enabled(admin.HandleSignIn(c)))
	r.Method(http.MethodPost, "/sign-out", signedIn(admin.HandleSignOut(c)))
	r.Method(http.MethodGet, "/runs", signedIn(admin.HandleRunsPage(c, st, deps.Cleanup)))
	r.Method(http.MethodPost, "/runs", signedIn(admin.HandleRunStart(c, deps.Cleanup)))
	r.Method(http.MethodGet, "/runs/{id}", signedIn(admin.HandleRunPage(c, st)))
	r.Method(http.MethodGet, "/takedown", signedIn(admin.HandleTakedownPage(c)))
	r.Method(http.MethodPost, "/takedown", signedIn(admin.HandleTakedownForm(c, s.remover)))
	r.Method(http.MethodPost, "/blocked/{hash}/unblock", signedIn(admin.HandleUnblockForm(c, st)))
}

// keyRoutes are /admin/keys: operators mint, list and revoke creator keys, list a key's pastes and
// take them all down, in the JSON API (bearer) and the console (signedIn) alike.
func keyRoutes(r chi.Router, cfg Config, deps Deps, s *server) {
	bearer, c, signedIn := s.auth.requireAdmin, s.console, s.console.SignedIn
	by, log, st, keys := store.TokenActor(cfg.AdminTokenHash, store.ViaAPI), deps.Logger, deps.Store, s.keys
	rate := func(v string) (string, error) {
		r, err := ParseRate(v)
		return r.String(), err
	}
	r.Method(http.MethodGet, "/keys", either(admin.ForConsole, signedIn(admin.HandleKeysPage(c, st)), bearer(admin.HandleKeyList(log, st))))
	r.Method(http.MethodPost, "/keys", either(admin.ForConsole,
		signedIn(admin.HandleKeyMintForm(c, st, keys, rate)), bearer(admin.HandleKeyCreate(log, keys, rate, by))))
	r.With(bearer).Method(http.MethodDelete, "/keys/{id}", admin.HandleKeyRevoke(log, keys, by))
	r.Method(http.MethodPost, "/keys/{id}/revoke", signedIn(admin.HandleKeyRevokeForm(c, st, keys)))
	r.Method(http.MethodPost, "/keys/{id}/takedown", either(admin.ForConsole,
		signedIn(admin.HandleKeyTakedownForm(c, st, keys)), bearer(admin.HandleKeyTakedown(log, keys, by))))
	r.Method(http.MethodGet, "/keys/{id}/pastes", either(admin.ForConsole,
		signedIn(admin.HandleKeyPage(c, st)), bearer(admin.HandleKeyPastes(log, st))))
}

// refuseFunc answers 405 with an Allow header naming the other methods the path has.
type refuseFunc func(w http.ResponseWriter, r *http.Request, detail string)

// refuseMethod answers 405 with an Allow header naming the methods router serves at the path, or
// notFound where it serves none.
func refuseMethod(router chi.Routes, st *site.Site, notFound http.HandlerFunc) refuseFunc {
	return func(w http.ResponseWriter, req *http.Request, detail string) {
		allowed := slices.DeleteFunc(allowedMethods(router, req), func(m string) bool { return m == req.Method })
		if len(allowed) == 0 { // nothing is served at this path at all
			notFound(w, req)
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		st.Error(w, req, problem.MethodNotAllowed.WithDetail(detail))
	}
}

// either sends requests for which is holds to yes and the others to no: one address serves curl its
// text and a person the page, or takes the browser's create form (isWebForm), or serves the console
// and the JSON admin API.
func either(is func(*http.Request) bool, yes, no http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if is(r) {
			yes.ServeHTTP(w, r)
			return
		}
		no.ServeHTTP(w, r)
	})
}

// byAccept serves a browser asking for HTML the page and every other client the text. The answer
// names Accept in Vary, so that a shared cache never hands one of them the other's answer.
func byAccept(page, text http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		request.VaryAccept(w.Header())
		either(request.WantsHTML, page, text).ServeHTTP(w, r)
	})
}

// routedMethods are the methods the Allow header may name, in the order it names them.
var routedMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
	http.MethodOptions,
}

// allowedMethods asks the router which methods it serves at the request's path: the Allow header
// of a 405 (RFC 9110, section 15.5.6). chi v5 finds them while routing but does not hand them to a
// custom 405 handler, so each method is matched again; this runs only on a 405.
func allowedMethods(router chi.Routes, r *http.Request) []string {
	path := r.URL.RawPath // what chi routes on
	if path == "" {
		path = r.URL.Path
	}
	return methodsAt(router, path)
}

// methodsAt lists the methods router serves at path. A mounted router is asked about the rest of
// the path itself: chi's Match answers yes to any method at a mount point's own address (/admin),
// which the mounted router then routes as "/".
func methodsAt(router chi.Routes, path string) []string {
	for _, rt := range router.Routes() {
		mount, ok := strings.CutSuffix(rt.Pattern, "/*")
		if rest, under := strings.CutPrefix(path, mount); ok && rt.SubRoutes != nil && under && (rest == "" || rest[0] == '/') {
			return methodsAt(rt.SubRoutes, cmp.Or(rest, "/"))
		}
	}
	matches := func(method string) bool { return router.Match(chi.NewRouteContext(), method, path) }
	var allowed []string
	for _, m := range routedMethods {
		if matches(m) || m == http.MethodHead && matches(http.MethodGet) { // middleware.GetHead
			allowed = append(allowed, m)
		}
	}
	return allowed
}
