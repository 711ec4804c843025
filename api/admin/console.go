package admin

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/api/site"
	"pastebin/store"
)

// templateFS holds the console's pages, drawn in the site's layout with the console's own
// (templates/layout.html: its navigation and script), and staticFS the console's script.
var (
	//go:embed templates
	templateFS embed.FS
	//go:embed static
	staticFS embed.FS
)

// Assets are the console's static files, for site.New.
func Assets() map[string][]byte { return site.Files(staticFS, "static") }

// sessionCookie names the console's session cookie; sessionTTL is how long a session lasts at most,
// and DefaultIdleTimeout how long one may go unused.
const (
	sessionCookie = "pastebin_admin"
	sessionTTL    = 12 * time.Hour
	maxFormBytes  = 64 << 10

	DefaultIdleTimeout = 30 * time.Minute
)

// Verifier checks an admin token typed or sent: nil when it is the admin token, else the problem
// to answer (a wrong token, or the client's allowance of wrong ones spent).
type Verifier interface {
	Verify(ctx context.Context, token, via string) *problem.Problem
}

// Console is the operators' console at /admin: pages over the same store and flows as the JSON
// admin API. An operator signs in with the admin token on a form; the browser then holds a session
// cookie, never the token. Console draws its pages and guards them (Enabled, SignedIn).
type Console struct {
	site      *site.Site
	pages     map[string]*template.Template
	sessions  *store.Store
	tokenHash []byte
	idle      time.Duration // a session unused this long has ended
	verifier  Verifier
}

// NewConsole returns the console of the admin token whose SHA-256 is tokenHash (empty: the console
// is off), with sessions in s that end after idle unused (0: DefaultIdleTimeout).
func NewConsole(st *site.Site, s *store.Store, tokenHash []byte, idle time.Duration, v Verifier) *Console {
	c := &Console{site: st, pages: map[string]*template.Template{}, sessions: s, tokenHash: tokenHash,
		idle: cmp.Or(idle, DefaultIdleTimeout), verifier: v}
	for _, name := range []string{"signin", "overview", "runs", "run", "takedown", "blocked", "audit", "hot", "reports", "preview", "keys", "key"} {
		c.pages[name] = st.Parse(templateFS, "templates/layout.html", "templates/"+name+".html")
	}
	return c
}

// ForConsole reports whether a request to an address that both the console and the JSON API answer
// is the browser's: it carries no bearer token, and asks for a page or posts a form.
func ForConsole(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return request.WantsHTML(r)
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mediaType == "application/x-www-form-urlencoded" || mediaType == "multipart/form-data"
}

// Enabled answers that the console is off while no admin token is configured. Forms sent from
// other sites never get here: the router refuses them.
func (c *Console) Enabled(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(c.tokenHash) == 0 {
			c.site.ErrorPage(w, r, problem.AdminDisabled.WithDetail("The console is off: set PASTEBIN_ADMIN_TOKEN to turn it on."))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		next.ServeHTTP(w, r)
	})
}

// session is a signed-in browser: the secret its cookie holds, and who signed in.
type session struct {
	secret []byte
	actor  store.Actor
}

// csrf is the token every form of the session carries: derived from the cookie's secret, which no
// other site can read, so a form it forges cannot carry it.
func (s session) csrf() string {
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte("pastebin console form"))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

type sessionCtxKey struct{}

func sessionOf(r *http.Request) session {
	s, _ := r.Context().Value(sessionCtxKey{}).(session)
	return s
}

// SignedIn lets through the requests of a signed-in operator, with the session in their context.
// A state-changing one must also carry the session's form token.
func (c *Console) SignedIn(next http.Handler) http.Handler {
	return c.Enabled(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if err != nil {
			c.signInFirst(w, r, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead &&
			subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf())) != 1 {
			c.site.ErrorPage(w, r, problem.CrossSite.WithDetail("This form is not from your session's pages. Reload the page and try again."))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionCtxKey{}, s)))
	}))
}

// errNoSession says the request carries no valid session.
var errNoSession = errors.New("no console session")

// session finds the request's session: its cookie's secret must name a session that has neither
// expired nor gone unused for the idle timeout (a browser left signed in on a shared machine), and
// that was signed in with the admin token configured now, so changing the token ends every session.
func (c *Console) session(r *http.Request) (session, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, errNoSession
	}
	secret, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(secret) != 32 {
		return session{}, errNoSession
	}
	hash := sha256.Sum256(secret)
	name, err := c.sessions.AdminSession(r.Context(), hash[:], c.idle)
	if errors.Is(err, store.ErrNotFound) {
		return session{}, errNoSession
	}
	if err != nil {
		return session{}, err
	}
	actor := store.TokenActor(c.tokenHash, store.ViaConsole)
	if name != actor.Name {
		return session{}, errNoSession
	}
	return session{secret: secret, actor: actor}, nil
}

// signInFirst sends a browser without a session to the sign-in page, back here afterwards; scripts
// and forms get 401.
func (c *Console) signInFirst(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case !errors.Is(err, errNoSession):
		c.failed(w, r, err)
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && !request.WantsJSON(r):
		http.Redirect(w, r, "/admin/sign-in?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
	case request.WantsJSON(r):
		problem.Write(w, r, problem.SignInRequired.WithDetail("Sign in at /admin/sign-in."))
	default:
		c.site.ErrorPage(w, r, problem.SignInRequired.WithDetail("Your session has ended. Sign in again."))
	}
}

// HandleSignIn handles POST /admin/sign-in: a right token starts a session; a wrong one counts
// against the client's allowance of wrong admin tokens, which the bearer tokens of the admin API
// share, and past it every attempt is refused before its token is compared (the Verifier).
func HandleSignIn(c *Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next := safeNext(r.PostFormValue("next"))
		token := strings.TrimSpace(r.PostFormValue("token"))
		if token == "" {
			c.renderSignIn(w, r, http.StatusBadRequest, next, "Type the admin token.")
			return
		}
		if p := c.verifier.Verify(r.Context(), token, store.ViaConsole); p != nil {
			detail := "That is not the admin token."
			if p.Status == http.StatusTooManyRequests {
				problem.SetRetryAfter(w.Header(), p.RetryAfter)
				detail = p.Detail
			}
			c.renderSignIn(w, r, p.Status, next, detail)
			return
		}
		if err := c.startSession(w, r); err != nil {
			c.failed(w, r, err)
			return
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	})
}

// startSession draws a session secret, records its hash, and gives the secret to the browser in a
// cookie scripts cannot read, sent only to /admin and only by this site's own pages.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request) error {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	hash := sha256.Sum256(secret)
	if err := c.sessions.StartAdminSession(r.Context(), hash[:], store.TokenActor(c.tokenHash, store.ViaConsole), sessionTTL, c.idle); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: base64.RawURLEncoding.EncodeToString(secret), Path: "/admin",
		MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.site.Secure(r),
	})
	return nil
}

// HandleSignOut handles POST /admin/sign-out: the session ends on the server, and its cookie goes.
func HandleSignOut(c *Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		hash := sha256.Sum256(s.secret)
		if err := c.sessions.EndAdminSession(r.Context(), hash[:], s.actor); err != nil {
			c.failed(w, r, err)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/admin", MaxAge: -1, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: c.site.Secure(r)})
		http.Redirect(w, r, "/admin/sign-in", http.StatusSeeOther)
	})
}

// safeNext is where to go after signing in: a console page, never another site.
func safeNext(next string) string {
	if next == "/admin" || strings.HasPrefix(next, "/admin/") && !strings.HasPrefix(next, "/admin/sign-") {
		return next
	}
	return "/admin"
}
