package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"pastebin/api/request"
	"pastebin/api/site"
	"pastebin/paste"
)

// Decoder reads the create form from a request: multipart (the page's own form, which can carry a
// file) or urlencoded. Even on error it returns what it read, so the form can be shown again
// filled in.
type Decoder func(w http.ResponseWriter, r *http.Request) (paste.Input, error)

// HandleCreate handles the create form. It answers 303 to the paste's page, with the delete token
// in a short-lived cookie for that page alone, which works without JavaScript. The Location is
// relative, so the redirect stays on the origin the form was posted to (CSP form-action).
func HandleCreate(pages *Pages, creator *paste.Creator, decode Decoder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode(w, r)
		if err != nil {
			pages.formError(w, r, in, err)
			return
		}
		in.Client = request.ClientKey(r.Context())
		typed := in.CreatorKey != ""
		if !typed {
			in.CreatorKey, _ = request.CreatorKey(r)
		}
		c, err := creator.Create(r.Context(), in, paste.IdempotencyKey{})
		if err != nil {
			pages.formError(w, r, in, err)
			return
		}
		if typed {
			keepCreatorKey(w, r, pages.site, in.CreatorKey)
		}
		setTokenCookie(w, r, pages.site, c.Paste.Code, c.Token)
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/"+c.Paste.Code, http.StatusSeeOther)
	})
}

// formError shows the form again, filled in, with what to correct; errors that are not the
// person's to correct get the error page.
func (pages *Pages) formError(w http.ResponseWriter, r *http.Request, in paste.Input, err error) {
	p := pages.site.Problem(r, err)
	keyRefused := errors.Is(err, paste.ErrCreatorKey)
	if keyRefused { // the key typed or kept no longer creates: forget it, and ask again
		forgetCreatorKey(w, r, pages.site)
	}
	if p.Status != http.StatusBadRequest && !keyRefused {
		pages.site.ErrorPage(w, r, p)
		return
	}
	v := formValues{
		Content: string(in.Content), Title: in.Title, Language: in.Language, Filename: in.Filename,
		ExpiresIn: in.ExpiresIn, Burn: in.Burn,
	}
	if in.MaxViews > 0 {
		v.MaxViews = strconv.Itoa(in.MaxViews)
	}
	v.AskKey = keyRefused
	pages.renderForm(w, r, p.Status, v, p.Detail)
}

// keepCreatorKey keeps the creator key typed into the form in the browser, for a year, so that the
// form asks for it once. HttpOnly: no script reads it; SameSite=Strict: no other site's form sends it.
func keepCreatorKey(w http.ResponseWriter, r *http.Request, st *site.Site, key string) {
	http.SetCookie(w, &http.Cookie{
		Name: request.CreatorKeyCookie, Value: key, Path: "/", MaxAge: 365 * 24 * 3600, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: st.Secure(r),
	})
}

func forgetCreatorKey(w http.ResponseWriter, r *http.Request, st *site.Site) {
	http.SetCookie(w, &http.Cookie{Name: request.CreatorKeyCookie, Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: st.Secure(r)})
}

// formValues are the create form's fields, to show the form again as it was sent, or filled from a
// paste (From, its code, and FromTitle, its page's title).
type formValues struct {
	Content, Title, Language, Filename, ExpiresIn, MaxViews string
	Burn                                                    bool
	From, FromTitle                                         string
	AskKey                                                  bool // ask for a creator key, whether or not the browser keeps one
}

// formView is what the create form page shows.
type formView struct {
	Form      formValues
	Error     string
	Expiries  []expiryChoice
	Languages []languageChoice
	MaxSize   string
	AskKey    bool // the form has a field for a creator key
}

// renderForm shows the create form, with v's values and an error to correct, if any.
func (pages *Pages) renderForm(w http.ResponseWriter, r *http.Request, status int, v formValues, problem string) {
	fv := formView{Form: v, Error: problem, MaxSize: site.HumanBytes(pages.maxBytes)}
	if pages.askKey {
		_, err := r.Cookie(request.CreatorKeyCookie)
		fv.AskKey = v.AskKey || err != nil
		w.Header().Set("Cache-Control", "no-store") // whether it asks depends on the cookie
	}
	known := slices.ContainsFunc(pages.expiries, func(c expiryChoice) bool { return c.Value == v.ExpiresIn })
	for _, c := range pages.expiries {
		c.Selected = v.ExpiresIn == c.Value || !known && c.Default // a refused value falls back to the default
		fv.Expiries = append(fv.Expiries, c)
	}
	for _, l := range languageChoices {
		l.Selected = l.Value == v.Language
		fv.Languages = append(fv.Languages, l)
	}
	if v.Language != "" && !slices.ContainsFunc(languageChoices, func(l languageChoice) bool { return l.Value == v.Language }) {
		// Any of chroma's names is a language: the menu keeps one it does not list, rather than lose it.
		fv.Languages = append(fv.Languages, languageChoice{Value: v.Language, Label: v.Language, Selected: true})
	}
	// A form filled from a paste holds its text, which is no more for search engines than its page.
	pages.site.Render(w, r, status, pages.index, site.Page{Title: "New paste", NoIndex: v.From != "", Data: fv})
}

// expiryChoice is one option of the form's expiry menu.
type expiryChoice struct {
	Value, Label      string
	Default, Selected bool
}

// expiryChoices are the API's usual lifetimes that the policy allows, "never" if it allows that,
// and the default, which is preselected, wherever it falls among them.
func expiryChoices(p paste.ExpiryPolicy) []expiryChoice {
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
		out = append(out, expiryChoice{Value: paste.FormatDuration(d), Label: humanDuration(d), Default: d == p.Default})
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
			return site.Plural(int64(d/u.unit), u.name)
		}
	}
	return site.Plural(int64(d/time.Second), "second")
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
			return "in " + site.Plural(int64(d/u.unit), u.name)
		}
	}
	return "in less than a minute"
}

// languageChoice is one option of the form's language menu.
type languageChoice struct {
	Value, Label string
	Selected     bool
}

// languageChoices are the languages people paste most; the API accepts any of chroma's names.
var languageChoices = []languageChoice{
	{Value: "", Label: "Automatic"}, {Value: "plaintext", Label: "Plain text"},
	{Value: "bash", Label: "Shell"}, {Value: "c", Label: "C"}, {Value: "c++", Label: "C++"},
	{Value: "c#", Label: "C#"}, {Value: "css", Label: "CSS"}, {Value: "diff", Label: "Diff"},
	{Value: "docker", Label: "Dockerfile"}, {Value: "go", Label: "Go"}, {Value: "html", Label: "HTML"},
	{Value: "ini", Label: "INI"}, {Value: "java", Label: "Java"}, {Value: "javascript", Label: "JavaScript"},
	{Value: "json", Label: "JSON"}, {Value: "kotlin", Label: "Kotlin"}, {Value: "lua", Label: "Lua"},
	{Value: "make", Label: "Makefile"}, {Value: "markdown", Label: "Markdown"}, {Value: "nginx", Label: "nginx"},
	{Value: "perl", Label: "Perl"}, {Value: "php", Label: "PHP"}, {Value: "powershell", Label: "PowerShell"},
	{Value: "python", Label: "Python"}, {Value: "ruby", Label: "Ruby"}, {Value: "rust", Label: "Rust"},
	{Value: "scala", Label: "Scala"}, {Value: "sql", Label: "SQL"}, {Value: "swift", Label: "Swift"},
	{Value: "toml", Label: "TOML"}, {Value: "typescript", Label: "TypeScript"}, {Value: "xml", Label: "XML"},
	{Value: "yaml", Label: "YAML"},
}
