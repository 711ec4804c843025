package api

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// console is the operators' console at /admin: pages over the same store and cleanup as the JSON
// admin API. An operator signs in with the admin token on a form; the browser then holds a session
// cookie, never the token.
type console struct {
	ps        *pasteService
	web       *webUI
	cleanup   CleanupRunner
	tokenHash []byte
	idle      time.Duration // a session unused this long has ended
	auth      *adminAuth
	health    map[string]func(context.Context) error
}

// sessionCookie names the console's session cookie; sessionTTL is how long a session lasts at most,
// and DefaultConsoleIdleTimeout how long one may go unused.
const (
	sessionCookie = "pastebin_admin"
	sessionTTL    = 12 * time.Hour
	maxFormBytes  = 64 << 10

	DefaultConsoleIdleTimeout = 30 * time.Minute
)

// consolePages are the console's templates, each in the site's layout.
var consolePages = []string{"signin", "overview", "runs", "run", "takedown", "blocked", "audit"}

func newConsole(cfg Config, deps Deps, ps *pasteService, auth *adminAuth) *console {
	c := &console{
		ps: ps, web: ps.web, cleanup: deps.Cleanup, tokenHash: cfg.AdminTokenHash, auth: auth,
		idle: cmp.Or(cfg.ConsoleIdleTimeout, DefaultConsoleIdleTimeout), health: readinessChecks(deps),
	}
	for _, name := range consolePages {
		c.web.pages["admin-"+name] = template.Must(template.New(name).ParseFS(templateFS,
			"templates/layout.html", "templates/admin_layout.html", "templates/admin_"+name+".html"))
	}
	return c
}

// routes adds the console's own pages to the /admin router; the addresses it shares with the JSON
// API are in adminRoutes.
func (c *console) routes(r chi.Router) {
	r.Method(http.MethodGet, "/", c.signedIn(c.handleOverview()))
	r.Method(http.MethodGet, "/sign-in", c.enabled(c.handleSignInPage()))
	r.Method(http.MethodPost, "/sign-in", c.enabled(c.handleSignIn()))
	r.Method(http.MethodPost, "/sign-out", c.signedIn(c.handleSignOut()))
	r.Method(http.MethodGet, "/runs", c.signedIn(c.handleRunsPage()))
	r.Method(http.MethodPost, "/runs", c.signedIn(c.handleRunStart()))
	r.Method(http.MethodGet, "/runs/{id}", c.signedIn(c.handleRunPage()))
	r.Method(http.MethodGet, "/takedown", c.signedIn(c.handleTakedownPage()))
	r.Method(http.MethodPost, "/takedown", c.signedIn(c.handleTakedown()))
	r.Method(http.MethodPost, "/blocked/{hash}/unblock", c.signedIn(c.handleUnblock()))
}

// forConsole reports whether a request to an address that both the console and the JSON API answer
// is the browser's: it carries no bearer token, and asks for a page or posts a form.
func forConsole(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return wantsHTML(r)
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mediaType == "application/x-www-form-urlencoded" || mediaType == "multipart/form-data"
}

// enabled answers that the console is off while no admin token is configured. Forms sent from
// other sites never get here: the router refuses them (refuseCrossSite).
func (c *console) enabled(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(c.tokenHash) == 0 {
			c.web.errorPage(w, r, errAdminDisabled.withDetail("The console is off: set PASTEBIN_ADMIN_TOKEN to turn it on."))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		next.ServeHTTP(w, r)
	})
}

// consoleSession is a signed-in browser: the secret its cookie holds, and who signed in.
type consoleSession struct {
	secret []byte
	actor  store.Actor
}

// csrf is the token every form of the session carries: derived from the cookie's secret, which no
// other site can read, so a form it forges cannot carry it.
func (s consoleSession) csrf() string {
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte("pastebin console form"))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

type sessionCtxKey struct{}

func sessionOf(r *http.Request) consoleSession {
	s, _ := r.Context().Value(sessionCtxKey{}).(consoleSession)
	return s
}

// signedIn lets through the requests of a signed-in operator, with the session in their context.
// A state-changing one must also carry the session's form token.
func (c *console) signedIn(next http.Handler) http.Handler {
	return c.enabled(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if err != nil {
			c.signInFirst(w, r, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead &&
			subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf())) != 1 {
			c.web.errorPage(w, r, errCrossSite.withDetail("This form is not from your session's pages. Reload the page and try again."))
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
func (c *console) session(r *http.Request) (consoleSession, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return consoleSession{}, errNoSession
	}
	secret, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(secret) != 32 {
		return consoleSession{}, errNoSession
	}
	hash := sha256.Sum256(secret)
	name, err := c.ps.store.AdminSession(r.Context(), hash[:], c.idle)
	if errors.Is(err, store.ErrNotFound) {
		return consoleSession{}, errNoSession
	}
	if err != nil {
		return consoleSession{}, err
	}
	actor := store.TokenActor(c.tokenHash, store.ViaConsole)
	if name != actor.Name {
		return consoleSession{}, errNoSession
	}
	return consoleSession{secret: secret, actor: actor}, nil
}

// signInFirst sends a browser without a session to the sign-in page, back here afterwards; scripts
// and forms get 401.
func (c *console) signInFirst(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case !errors.Is(err, errNoSession):
		c.web.errorPage(w, r, asProblem(r, c.ps.logger, err))
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && !wantsJSON(r):
		http.Redirect(w, r, "/admin/sign-in?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
	case wantsJSON(r):
		writeProblem(w, r, errSignInRequired.withDetail("Sign in at /admin/sign-in."))
	default:
		c.web.errorPage(w, r, errSignInRequired.withDetail("Your session has ended. Sign in again."))
	}
}

// handleSignIn handles POST /admin/sign-in: a right token starts a session; a wrong one counts
// against the client's allowance of wrong admin tokens, which the bearer tokens of the admin API
// share, and past it every attempt is refused before its token is compared (adminAuth).
func (c *console) handleSignIn() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next := safeNext(r.PostFormValue("next"))
		token := strings.TrimSpace(r.PostFormValue("token"))
		if token == "" {
			c.renderSignIn(w, r, http.StatusBadRequest, next, "Type the admin token.")
			return
		}
		if p := c.auth.verify(r.Context(), token, store.ViaConsole); p != nil {
			detail := "That is not the admin token."
			if p.status == http.StatusTooManyRequests {
				setRetryAfter(w.Header(), p.retryAfter)
				detail = p.detail
			}
			c.renderSignIn(w, r, p.status, next, detail)
			return
		}
		if err := c.startSession(w, r); err != nil {
			c.web.errorPage(w, r, asProblem(r, c.ps.logger, err))
			return
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	})
}

// startSession draws a session secret, records its hash, and gives the secret to the browser in a
// cookie scripts cannot read, sent only to /admin and only by this site's own pages.
func (c *console) startSession(w http.ResponseWriter, r *http.Request) error {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	hash := sha256.Sum256(secret)
	if err := c.ps.store.StartAdminSession(r.Context(), hash[:], store.TokenActor(c.tokenHash, store.ViaConsole), sessionTTL, c.idle); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: base64.RawURLEncoding.EncodeToString(secret), Path: "/admin",
		MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.web.secure(r),
	})
	return nil
}

// handleSignOut handles POST /admin/sign-out: the session ends on the server, and its cookie goes.
func (c *console) handleSignOut() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		hash := sha256.Sum256(s.secret)
		if err := c.ps.store.EndAdminSession(r.Context(), hash[:], s.actor); err != nil {
			c.web.errorPage(w, r, asProblem(r, c.ps.logger, err))
			return
		}
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/admin", MaxAge: -1, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: c.web.secure(r)})
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
