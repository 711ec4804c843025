// Package site is what every page and answer of the HTTP surface shares: the service's public
// address (the URLs of a paste, Secure cookies), the layout the public pages and the console's
// pages are drawn in, the static files they use, and how an error is shown: a page to a browser,
// problem details to every other client.
package site

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/store"
)

// templateFS holds the layout every page is drawn in, and the error page.
//
//go:embed templates
var templateFS embed.FS

// pageCSP is the Content-Security-Policy of every HTML page: scripts and styles only from the
// binary's own files (never inline), no plugins, no framing, forms posting only here.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Site is the service as its clients see it.
type Site struct {
	baseURL   string
	logger    *slog.Logger
	assets    assets
	layout    *template.Template // never executed itself: pages are parsed into clones of it
	errorPage *template.Template
}

// New returns the site at baseURL (empty: the scheme and host each request came to). Its static
// files are its own and those of files, by name: a page's package adds what its templates use. A
// template that does not parse is a broken build, so it panics, and every test catches it.
func New(baseURL string, logger *slog.Logger, files ...map[string][]byte) *Site {
	s := &Site{baseURL: baseURL, logger: logger, assets: newAssets(files...),
		layout: template.Must(template.New("layout").ParseFS(templateFS, "templates/layout.html"))}
	s.errorPage = s.Parse(templateFS, "templates/error.html")
	return s
}

// Parse parses a page's templates, which define its "content" (and may define the layout's
// "head" and "nav"), from fsys into a copy of the site's layout.
func (s *Site) Parse(fsys fs.FS, patterns ...string) *template.Template {
	return template.Must(template.Must(s.layout.Clone()).ParseFS(fsys, patterns...))
}

// Page is what every template is given: the layout's fields and the page's own data.
type Page struct {
	Title   string
	NoIndex bool // paste and error pages are not for search engines
	Data    any
	assets  assets
}

// Asset is the address of a static file, for the templates.
func (p Page) Asset(name string) string { return p.assets.url(name) }

// Render answers the page t. It renders into a buffer first, so a template error becomes a clean
// error page rather than half a page.
func (s *Site) Render(w http.ResponseWriter, r *http.Request, status int, t *template.Template, p Page) {
	p.assets = s.assets
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.logger.ErrorContext(r.Context(), "render page", "page", t.Name(), "err", err)
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString("<!doctype html><title>Internal error</title><p>Internal error.</p>\n")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Cache-Control") == "" {
		// Pages show live pastes and tokens: never keep one, so a deleted paste is not shown again.
		h.Set("Cache-Control", "no-store")
	}
	h.Del("ETag")
	h.Del("Content-Disposition")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// Error answers err: problem.From decides the problem; a browser asking for a page gets one, and
// every other client, and every client of /api/ and /admin/, gets problem details.
func (s *Site) Error(w http.ResponseWriter, r *http.Request, err error) {
	p := problem.From(r, s.logger, err)
	if pageOrProblem(r) {
		request.VaryAccept(w.Header())
	}
	if pageOrProblem(r) && request.WantsHTML(r) {
		s.ErrorPage(w, r, p)
		return
	}
	problem.Write(w, r, p)
}

// Problem is problem.From with the site's logger: the problem err is, to show on a form.
func (s *Site) Problem(r *http.Request, err error) *problem.Problem {
	return problem.From(r, s.logger, err)
}

// pageOrProblem reports whether an error at the request's path is a page or problem details by
// the Accept header: the JSON APIs' clients always get problem details.
func pageOrProblem(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, "/admin/")
}

// errorData is what the error page shows.
type errorData struct {
	Status  int
	Heading string
	Detail  string
	Hint    string
	Back    string // the paste's page, when the error is a form on it to fill in again
	Gone    string // the paste the error says is gone (404, 410, 451): the page's script forgets its token
}

// ErrorPage answers a problem as a page in the site's style: its status, a heading and what to do.
func (s *Site) ErrorPage(w http.ResponseWriter, r *http.Request, p *problem.Problem) {
	d := errorData{Status: p.Status, Heading: p.Title, Detail: p.Detail}
	switch {
	case p.Name == problem.RouteNotFound.Name:
		d.Heading, d.Hint = "Page not found", "Check the address, or create a new paste."
	case p.Status == http.StatusNotFound:
		d.Hint = "Check the link: paste addresses are case-sensitive. Or create a new paste."
	case p.Status == http.StatusGone:
		d.Heading, d.Hint = "This paste is gone", "Its content is no longer stored here and cannot be brought back."
	case p.Name == problem.LegalTakedown.Name:
		d.Heading, d.Hint = "This paste is unavailable", "It was removed for legal reasons and cannot be brought back."
	case p.Name == problem.ContentBlocked.Name:
		d.Hint = "If you think this is a mistake, tell the operators of this service."
	case p.Status == http.StatusTooManyRequests:
		d.Heading, d.Hint = "Slow down", "Wait a little, then try again."
	case p.Status >= 500:
		d.Heading, d.Hint = "Something went wrong", "Nothing you did caused this. Try again in a moment."
	}
	if p.Name == problem.Internal.Name {
		d.Detail = "" // "internal error" says nothing the heading does not
	}
	if p.Status == http.StatusNotFound || p.Status == http.StatusGone || p.Name == problem.LegalTakedown.Name {
		d.Gone = chi.URLParam(r, "code")
	}
	if from := r.URL.Query().Get("from"); p.Name == problem.NotEditable.Name && store.ValidShortCode(from) {
		d.Back = "/" + from // edit as new refused: the paste itself is still there to read
	}
	refusedForm := p.Status == http.StatusBadRequest || p.Status == http.StatusForbidden || p.Status == http.StatusTooManyRequests
	if code := chi.URLParam(r, "code"); r.Method == http.MethodPost && code != "" && refusedForm {
		d.Back = "/" + code
	}
	problem.SetRetryAfter(w.Header(), p.RetryAfter)
	s.Render(w, r, p.Status, s.errorPage, Page{Title: d.Heading, NoIndex: true, Data: d})
}

// PasteURLs are the addresses of one paste.
type PasteURLs struct {
	Page string // GET: the text to curl, the page to browsers
	Raw  string
	API  string // metadata and DELETE
}

// URLs builds a paste's addresses on the configured base URL, or else on the one the request came to.
func (s *Site) URLs(r *http.Request, code string) PasteURLs {
	base := strings.TrimSuffix(s.baseURL, "/")
	if base == "" {
		scheme := "http"
		if request.ViaHTTPS(r) {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return PasteURLs{Page: base + "/" + code, Raw: base + "/raw/" + code, API: base + "/api/v1/pastes/" + code}
}

// Secure reports whether a cookie set in answer to r is sent over HTTPS only.
func (s *Site) Secure(r *http.Request) bool {
	return request.ViaHTTPS(r) || strings.HasPrefix(s.baseURL, "https://")
}
