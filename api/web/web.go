// Package web is the public pages: the create form (filled from a paste: edit as new), a paste's
// page (highlighted, or the page that asks before a view of a view-limited paste is taken), the page
// of a paste a button took, the list of this browser's pastes, and the forms that create and delete
// without JavaScript. Every page is drawn in the site's layout.
package web

import (
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api/site"
	"pastebin/paste"
	"pastebin/store"
)

// templateFS holds the pages' own templates, each drawn in the site's layout.
//
//go:embed templates
var templateFS embed.FS

// Assets are the pages' generated static files (the highlighting styles, which the layout links),
// for site.New.
func Assets() map[string][]byte { return map[string][]byte{"highlight.css": highlightCSS()} }

// Config is what the pages show and how they render.
type Config struct {
	Expiry               paste.ExpiryPolicy // the form's expiry menu
	MaxPasteBytes        int64
	RenderCacheBytes     int64         // paste pages' rendered content kept in memory; 0: none
	MaxConcurrentRenders int           // paste contents rendered at once; 0: half the processors, at least one
	ReportRetention      time.Duration // how long a report's contact address is kept, as the report form says
	// AskCreatorKey: only holders of a creator key create here, so the form asks for one until the
	// browser keeps it (request.CreatorKeyCookie).
	AskCreatorKey bool
}

// Pages draws the public pages.
type Pages struct {
	site     *site.Site
	index    *template.Template
	paste    *template.Template
	mine     *template.Template
	report   *template.Template
	renders  *renderer
	expiries []expiryChoice
	maxBytes int64
	askKey   bool
	now      func() time.Time

	reportRetention time.Duration
}

// New returns the pages of st; now is the clock expiries are shown from. The renderer's metrics
// go to reg.
func New(st *site.Site, cfg Config, now func() time.Time, reg prometheus.Registerer) *Pages {
	return &Pages{
		site: st, index: st.Parse(templateFS, "templates/index.html"), paste: st.Parse(templateFS, "templates/paste.html"),
		mine: st.Parse(templateFS, "templates/mine.html"), report: st.Parse(templateFS, "templates/report.html"),
		renders: newRenderer(cfg.RenderCacheBytes, cfg.MaxConcurrentRenders, reg), expiries: expiryChoices(cfg.Expiry),
		maxBytes: cfg.MaxPasteBytes, askKey: cfg.AskCreatorKey, now: now, reportRetention: cfg.ReportRetention,
	}
}

// HandleIndex handles GET / for browsers: the create form, or with ?from=<code> the form filled
// with that paste (edit as new, editnew.go).
func HandleIndex(pages *Pages, rd *paste.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The form changes only with the binary; revalidating keeps the back button fast. Filled
		// from a paste, revalidating also means a deleted paste does not fill it from a cache.
		w.Header().Set("Cache-Control", "no-cache")
		var v formValues
		if from := r.URL.Query().Get("from"); from != "" {
			var err error
			if v, err = pages.copyOf(r, rd, from); err != nil {
				pages.site.Error(w, r, err)
				return
			}
		}
		pages.renderForm(w, r, http.StatusOK, v, "")
	})
}

// pasteView is what the paste page shows. Exactly one of Interstitial, Encrypted, Content.Omitted
// and the highlighted Content is what fills the page's body.
type pasteView struct {
	Code, URL       string
	Title, Filename string
	Size            string
	Expires         time.Time // zero: never
	ExpiresIn       string
	BurnAfterRead   bool // a view limit of one
	// ViewLimited: only a POST reads the paste, taking one of its MaxViews views (ViewsLeft left).
	// Neither such a paste nor an encrypted one can be edited as new from the server.
	ViewLimited         bool
	MaxViews, ViewsLeft int
	// Encrypted: the page's script fetches and decrypts the paste (e2e.js) in Encryption's format;
	// the server shows nothing of it.
	Encrypted               bool
	Encryption              string
	Interstitial            bool   // a view-limited paste not yet opened
	Taken                   bool   // this page took one view; others are left
	Burned                  bool   // this page holds the only copy left
	Token                   string // the delete token, shown once after a browser create
	Content                 rendered
	RawAvailable, Deletable bool
	EditAsNew               bool // the page links the create form filled with this paste
}

func (pages *Pages) newPasteView(r *http.Request, p store.Paste) pasteView {
	v := pasteView{
		Code: p.Code, URL: pages.site.URLs(r, p.Code).Page, Title: p.Title, Filename: p.Filename,
		Size: site.HumanBytes(p.Size), BurnAfterRead: p.BurnAfterRead(),
		ViewLimited: p.ViewLimited(), MaxViews: p.MaxViews, ViewsLeft: p.ViewsLeft,
		Encrypted: p.Encryption != "", Encryption: p.Encryption,
		RawAvailable: p.Encryption == "", Deletable: true,
	}
	if !p.ExpiresAt.IsZero() {
		v.Expires, v.ExpiresIn = p.ExpiresAt.UTC(), relativeTime(pages.now(), p.ExpiresAt)
	}
	return v
}

// HandlePaste handles GET /{code} for browsers: the paste highlighted, or, for a paste with a view
// limit, a page asking the reader to confirm. A GET never takes a view, so link previews and
// crawlers cannot take a paste meant for a person. An encrypted paste's page holds none of it: its
// script fetches the ciphertext (or, with a view limit, asks first) and decrypts it.
func HandlePaste(pages *Pages, rd *paste.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := chi.URLParam(r, "code")
		f, err := rd.Find(r.Context(), code) // 404 and 410 exactly as the raw route (invariants 4, 5)
		if err != nil {
			pages.site.Error(w, r, err)
			return
		}
		v := pages.newPasteView(r, f.Paste)
		switch {
		case v.Encrypted: // its script fetches the ciphertext, or asks first if only a POST reads it
		case !paste.OpenToGet(f.Paste):
			v.Interstitial, v.RawAvailable = true, false
		default:
			v.Content, err = pages.content(r, rd, f)
		}
		if err != nil {
			pages.site.Error(w, r, err)
			return
		}
		v.EditAsNew = v.Content.HTML != "" && editableAsNew(f.Paste) // shown as text, so the form can hold it
		v.Token = takeTokenCookie(w, r, code)
		pages.site.Render(w, r, http.StatusOK, pages.paste, site.Page{Title: v.PageTitle(), NoIndex: true, Data: v})
	})
}

// content reads and renders a paste without a view limit; a paste too big to show is not even read.
func (pages *Pages) content(r *http.Request, rd *paste.Reader, f paste.Found) (rendered, error) {
	if f.Paste.Size > maxShownBytes {
		return tooLargeToShow, nil
	}
	data, err := rd.Bytes(r.Context(), f)
	if err != nil {
		return rendered{}, err
	}
	return pages.renders.page(f.Paste, data), nil
}

// ShowConsumed shows a view the page's button took, and reports whether it could: one the page
// cannot show (too large, not text) is the caller's to download instead, since this view cannot be
// fetched again.
func (pages *Pages) ShowConsumed(w http.ResponseWriter, r *http.Request, c paste.Consumed) bool {
	v := pages.newPasteView(r, c.Paste)
	v.Burned, v.Taken, v.RawAvailable = c.Paste.ViewsLeft == 0, c.Paste.ViewsLeft > 0, false
	v.Deletable = v.Taken
	v.Content = pages.renders.once(c.Content, c.Paste.Language, c.Paste.Filename)
	if v.Content.Omitted != "" {
		return false
	}
	pages.site.Render(w, r, http.StatusOK, pages.paste, site.Page{Title: v.PageTitle(), NoIndex: true, Data: v})
	return true
}

// PageTitle is the paste's title, else its file name, else its code.
func (v pasteView) PageTitle() string {
	if v.Title != "" {
		return v.Title
	}
	if v.Filename != "" {
		return v.Filename
	}
	return "Paste " + v.Code
}

// ExpiresISO is the expiry for machines (the time element, the page's script); "" for never.
func (v pasteView) ExpiresISO() string {
	if v.Expires.IsZero() {
		return ""
	}
	return v.Expires.Format(time.RFC3339)
}

// ExpiresTitle is the exact expiry for people, shown on hover.
func (v pasteView) ExpiresTitle() string { return v.Expires.Format("2 Jan 2006, 15:04 MST") }

// ViewsLeftText is how many views the paste has left, in words.
func (v pasteView) ViewsLeftText() string {
	return fmt.Sprintf("%d of %s left", v.ViewsLeft, site.Plural(int64(v.MaxViews), "view"))
}

// Lines is the number of lines, in words.
func (v pasteView) Lines() string { return site.Plural(int64(v.Content.Lines), "line") }
