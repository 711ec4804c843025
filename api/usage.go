package api

import (
	"net/http"

	"pastebin/api/site"
	"pastebin/paste"
)

// How to use the service: the usage text curl gets at /, and the contract.

// handleOpenAPI serves the HTTP contract.
func handleOpenAPI(spec []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(spec)
	})
}

// handleUsage answers GET / to curl with how to use the service.
func handleUsage(st *site.Site, expiry paste.ExpiryPolicy, access paste.CreateAccess) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := st.URLs(r, "").Page
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(`pastebin: share text by URL.

  curl --data-binary @file.txt ` + base + `
  curl -F file=@file.txt ` + base + `
  curl -T file.txt ` + base + `
  echo hello | curl --data-binary @- '` + base + `?expires_in=1h&burn=true'
` + keyNote(access, base) + `
The answer is the paste's URL and, on a second line, its delete token:
  curl -X DELETE -H 'Authorization: Bearer <token>' ` + base + `<code>

Options (query parameter or header): expires_in (10m, 1h, 1d, 1w, 30d, seconds` + neverNote(expiry) + `),
burn=true (burn after reading), max_views (1 to 1000), title, language, filename.

A burn-after-reading or view-limited paste is read with a POST, which takes one view; a GET
never returns it:
  curl -X POST ` + base + `<code>

End-to-end encrypted pastes: pastebin put --encrypt, or the web page's switch (the key stays in
the link's #fragment).

Haste clients (editor plugins, chat bots, hastebin tools) take ` + base + ` as their server.

The whole API: ` + base + `openapi.yaml
`))
	})
}

// keyNote tells curl users of an instance where only key holders create how to send their key.
func keyNote(access paste.CreateAccess, base string) string {
	if access != paste.AccessKeys {
		return ""
	}
	return `
Only holders of a creator key create here (the operators give keys out); send it with each create:
  curl -H 'Authorization: Bearer <creator key>' --data-binary @file.txt ` + base + `
`
}

func neverNote(p paste.ExpiryPolicy) string {
	if p.AllowNever {
		return ", never"
	}
	return ""
}
