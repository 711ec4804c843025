package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routes lists the whole HTTP surface.
func routes(cfg Config, deps Deps, ps *pasteService) http.Handler {
	r := chi.NewRouter()
	r.Use(assignRequestIDs, identifyClients(cfg.TrustedProxies), observeRequests(deps.Logger, newHTTPMetrics(deps.Registry)),
		recoverPanics(deps.Logger, ps.writeError), securityHeaders)
	notFound := func(w http.ResponseWriter, r *http.Request) {
		ps.writeError(w, r, errRouteNotFound.withDetail("There is nothing at "+r.URL.Path+"."))
	}
	r.NotFound(notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		ps.writeError(w, r, errMethodNotAllowed.withDetail(r.Method+" is not allowed on "+r.URL.Path+"."))
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
	r.Method(http.MethodGet, "/", either(wantsHTML, handleWebIndex(ps.web), handleUsage(ps)))
	creates := r.With(ps.limits.guardCreate(ps.writeError)) // per-client rate, then a bounded upload slot
	creates.Method(http.MethodPost, "/", either(isWebForm, handleWebCreate(ps.web), handlePasteCreateCurl(ps)))
	creates.Method(http.MethodPut, "/{name}", handlePasteCreateCurl(ps))
	creates.Method(http.MethodPost, "/api/v1/pastes", handlePasteCreateJSON(ps))
	r.Method(http.MethodGet, "/api/v1/pastes/{code}", handlePasteMeta(ps))
	r.Method(http.MethodDelete, "/api/v1/pastes/{code}", handlePasteDelete(ps))
	r.Method(http.MethodGet, "/raw/{code}", handlePasteRaw(ps))
	r.Method(http.MethodHead, "/raw/{code}", handlePasteHead(ps))
	r.Method(http.MethodGet, "/{code}", either(wantsHTML, handleWebPaste(ps.web), handlePasteRaw(ps)))
	r.Method(http.MethodHead, "/{code}", handlePasteHead(ps))
	r.Method(http.MethodDelete, "/{code}", handlePasteDelete(ps))
	r.Method(http.MethodPost, "/{code}/burn", handleWebBurn(ps.web))
	r.Method(http.MethodPost, "/{code}/delete", handleWebDelete(ps.web))
	return r
}
