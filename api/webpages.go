package api

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// templateFS holds the pages' templates: layout.html around one page each.
//
//go:embed templates
var templateFS embed.FS

// pageCSP is the Content-Security-Policy of every HTML page: scripts and styles only from the
// binary's own files (never inline), no plugins, no framing, forms posting only here.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// webUI is the browser frontend: the pages and the files they use.
type webUI struct {
	ps        *pasteService
	renders   *renderer
	assets    assets
	pages     map[string]*template.Template
	expiries  []expiryChoice
	languages []languageChoice
}

// newWebUI parses the embedded templates and prepares the static files. A template that does not
// parse is a broken build, so it panics, and every test catches it.
func newWebUI(ps *pasteService, renders *renderer) *webUI {
	web := &webUI{
		ps: ps, renders: renders, assets: newAssets(map[string][]byte{"highlight.css": highlightCSS()}),
		pages: map[string]*template.Template{}, expiries: expiryChoices(ps.cfg.Expiry), languages: languageChoices,
	}
	for _, name := range []string{"index", "paste", "error"} {
		web.pages[name] = template.Must(template.New(name).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return web
}

// page is what every template is given: the layout's fields and the page's own data.
type page struct {
	Title   string
	NoIndex bool // paste and error pages are not for search engines
	Data    any
	assets  assets
}

// Asset is the address of a static file, for the templates.
func (p page) Asset(name string) string { return p.assets.url(name) }

// render answers an HTML page. It renders into a buffer first, so a template error becomes a
// clean error page rather than half a page.
func (web *webUI) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.assets = web.assets
	var buf bytes.Buffer
	if err := web.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		web.ps.logger.ErrorContext(r.Context(), "render page", "page", name, "err", err)
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

// errorData is what the error page shows.
type errorData struct {
	Status  int
	Heading string
	Detail  string
	Hint    string
	Back    string // the paste's page, when the error is a form on it to fill in again
	Gone    string // the paste the error says is gone (404, 410, 451): the page's script forgets its token
}

// errorPage answers a problem as a page in the site's style: its status, a heading and what to do.
func (web *webUI) errorPage(w http.ResponseWriter, r *http.Request, p *problem) {
	d := errorData{Status: p.status, Heading: p.title, Detail: p.detail}
	switch {
	case p.name == errRouteNotFound.name:
		d.Heading, d.Hint = "Page not found", "Check the address, or create a new paste."
	case p.status == http.StatusNotFound:
		d.Hint = "Check the link: paste addresses are case-sensitive. Or create a new paste."
	case p.status == http.StatusGone:
		d.Heading, d.Hint = "This paste is gone", "Its content is no longer stored here and cannot be brought back."
	case p.name == errLegalTakedown.name:
		d.Heading, d.Hint = "This paste is unavailable", "It was removed for legal reasons and cannot be brought back."
	case p.name == errContentBlocked.name:
		d.Hint = "If you think this is a mistake, tell the operators of this service."
	case p.status == http.StatusTooManyRequests:
		d.Heading, d.Hint = "Slow down", "Wait a little, then try again."
	case p.status >= 500:
		d.Heading, d.Hint = "Something went wrong", "Nothing you did caused this. Try again in a moment."
	}
	if p.name == errInternal.name {
		d.Detail = "" // "internal error" says nothing the heading does not
	}
	if p.status == http.StatusNotFound || p.status == http.StatusGone || p.name == errLegalTakedown.name {
		d.Gone = chi.URLParam(r, "code")
	}
	refusedForm := p.status == http.StatusBadRequest || p.status == http.StatusForbidden || p.status == http.StatusTooManyRequests
	if code := chi.URLParam(r, "code"); r.Method == http.MethodPost && code != "" && refusedForm {
		d.Back = "/" + code
	}
	setRetryAfter(w.Header(), p.retryAfter)
	web.render(w, r, p.status, "error", page{Title: d.Heading, NoIndex: true, Data: d})
}

// wantsPage reports whether an error should be answered as a page: the client is a browser asking
// for HTML, and the path is not one of the JSON APIs, whose clients always get problem details.
func wantsPage(r *http.Request) bool {
	return pageOrProblem(r) && wantsHTML(r)
}

// pageOrProblem reports whether an error at the request's path is a page or problem details by
// the Accept header.
func pageOrProblem(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, "/admin/")
}

// expiryChoice is one option of the form's expiry menu.
type expiryChoice struct {
	Value, Label      string
	Default, Selected bool
}

// expiryChoices are the API's usual lifetimes that the policy allows, "never" if it allows that,
// and the default, which is preselected, wherever it falls among them.
func expiryChoices(p ExpiryPolicy) []expiryChoice {
	var ds []time.Duration
	for _, d := range []time.Duration{10 * time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour} {
		if p.Max <= 0 || d <= p.Max {
			ds = append(ds, d)
		}
	}
	if p.Default != 0 && !slices.Contains(ds, p.Default) {
		ds = append(ds, p.Default)
		slices.Sort(ds)
	}
	out := make([]expiryChoice, 0, len(ds)+1)
	for _, d := range ds {
		out = append(out, expiryChoice{Value: formatDuration(d), Label: humanDuration(d), Default: d == p.Default})
	}
	if p.AllowNever {
		out = append(out, expiryChoice{Value: "never", Label: "Never", Default: p.Default == 0})
	}
	return out
}

// humanDuration writes d in its largest whole unit, in words: "10 minutes", "1 week".
func humanDuration(d time.Duration) string {
	for _, u := range []struct {
		name string
		unit time.Duration
	}{{"week", 7 * 24 * time.Hour}, {"day", 24 * time.Hour}, {"hour", time.Hour}, {"minute", time.Minute}} {
		if d >= u.unit && d%u.unit == 0 {
			return plural(int64(d/u.unit), u.name)
		}
	}
	return plural(int64(d/time.Second), "second")
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

// relativeTime says how far t is from now, roughly, the way people say it: "in 3 hours".
func relativeTime(now, t time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return "now"
	case d < time.Minute:
		return "in less than a minute"
	}
	d = d.Round(time.Minute) // a day from now is "in 1 day" even a second later
	for _, u := range []struct {
		name string
		unit time.Duration
	}{{"day", 24 * time.Hour}, {"hour", time.Hour}, {"minute", time.Minute}} {
		if d >= u.unit {
			return "in " + plural(int64(d/u.unit), u.name)
		}
	}
	return "in less than a minute"
}

// humanBytes writes a size the way people read it: "812 bytes", "14.2 KiB".
func humanBytes(n int64) string {
	oneDecimal := func(f float64) string { return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") }
	switch {
	case n < 1<<10:
		return plural(n, "byte")
	case n < 1<<20:
		return oneDecimal(float64(n)/(1<<10)) + " KiB"
	}
	return oneDecimal(float64(n)/(1<<20)) + " MiB"
}
