package api

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes lists the whole HTTP surface.
func routes(cfg Config, deps Deps, ps *pasteService) http.Handler {
	r := chi.NewRouter()
	r.Use(assignRequestIDs, identifyClients(cfg.TrustedProxies, cfg.ClientIPHeader), observeRequests(deps.Logger, newHTTPMetrics(deps.Registry)),
		recoverPanics(deps.Logger, ps.writeError), securityHeaders, strictTransport(cfg.HSTSMaxAge),
		limitHeaderSize(cfg.MaxHeaderBytes, ps.writeError),
		refuseUnknownMethods(ps.writeError), refuseCrossSite(cfg.BaseURL, http.HandlerFunc(ps.answerCrossSite)),
		// HEAD is allowed wherever GET is (RFC 9110, section 9.1): a HEAD with no route of its own
		// runs the GET handler, whose body net/http drops, so it answers exactly GET's headers.
		middleware.GetHead)
	notFound := func(w http.ResponseWriter, r *http.Request) {
		ps.writeError(w, r, errRouteNotFound.withDetail("There is nothing at "+r.URL.Path+"."))
	}
	r.NotFound(notFound)
	refuse := func(w http.ResponseWriter, req *http.Request, detail string) {
		allowed := slices.DeleteFunc(allowedMethods(r, req), func(m string) bool { return m == req.Method })
		if len(allowed) == 0 { // nothing is served at this path at all
			notFound(w, req)
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		ps.writeError(w, req, errMethodNotAllowed.withDetail(detail))
	}
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
	r.Method(http.MethodGet, "/problems", handleProblemTypes())
	r.Method(http.MethodGet, "/problems/{name}", handleProblemTypes())

	r.Mount("/admin", adminRoutes(cfg, deps, ps))

	r.Method(http.MethodGet, "/static/{hash}/{name}", handleStatic(ps, ps.web.assets))
	r.Method(http.MethodGet, "/", byAccept(handleWebIndex(ps.web), handleUsage(ps)))
	creates := r.With(ps.limits.guardCreate(ps.writeError)) // per-client rate, then a bounded upload slot
	creates.Method(http.MethodPost, "/", either(isWebForm, handleWebCreate(ps.web), handlePasteCreateCurl(ps)))
	creates.Method(http.MethodPut, "/{name}", handlePasteCreateCurl(ps))
	creates.Method(http.MethodPost, "/api/v1/pastes", handlePasteCreateJSON(ps))
	r.Method(http.MethodGet, "/api/v1/pastes/{code}", handlePasteMeta(ps))
	r.Method(http.MethodDelete, "/api/v1/pastes/{code}", handlePasteDelete(ps))
	consume := handlePasteConsume(ps.web, refuse, fromPageButton)
	r.Method(http.MethodGet, "/raw/{code}", handlePasteText(ps))
	r.Method(http.MethodPost, "/raw/{code}", consume)
	r.Method(http.MethodGet, "/{code}", byAccept(handleWebPaste(ps.web), handlePasteText(ps)))
	r.Method(http.MethodPost, "/{code}", consume)
	r.Method(http.MethodDelete, "/{code}", handlePasteDelete(ps))
	r.Method(http.MethodPost, "/{code}/burn", handlePasteConsume(ps.web, refuse, alwaysPage))
	r.Method(http.MethodPost, "/{code}/delete", handleWebDelete(ps.web))
	return r
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
