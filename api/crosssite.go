package api

import (
	"net/http"
	"net/url"
	"strings"

	"pastebin/api/admin"
	"pastebin/api/problem"
	"pastebin/api/site"
)

// refuseCrossSite refuses every request with an unsafe method that a browser says another site
// sent: its Sec-Fetch-Site, or else (a browser too old to send that) an Origin that is not the
// request's host. Any web page can make its visitors' browsers post forms and fetches here, with
// their cookies and from their addresses: pastes created in their name, their allowance spent, a
// console action taken with an operator's session. Clients that send neither header (curl, API
// clients) are no browser's victims and pass. net/http's CrossOriginProtection judges; the public
// base URL is trusted as an origin, for a proxy that rewrites Host.
func refuseCrossSite(baseURL string, refuse http.Handler) func(http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	if u, err := url.Parse(baseURL); err == nil && u.Scheme != "" && u.Host != "" {
		_ = cop.AddTrustedOrigin(u.Scheme + "://" + u.Host) // well-formed by construction
	}
	cop.SetDenyHandler(refuse)
	return cop.Handler
}

// answerCrossSite is refuseCrossSite's answer: a page to a browser, problem details to the rest, as
// every error is; the console's forms get the console's page.
func answerCrossSite(st *site.Site) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := problem.CrossSite.WithDetail("This request was sent from another site's page. Use this site's own pages.")
		if strings.HasPrefix(r.URL.Path, "/admin/") && admin.ForConsole(r) {
			st.ErrorPage(w, r, p)
			return
		}
		st.Error(w, r, p)
	})
}
