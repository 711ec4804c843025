package web

import (
	"net/http"

	"pastebin/api/site"
)

// HandleMine handles GET /mine: the pastes this browser created, listed by the page's script
// (mine.js) from the delete tokens the browser keeps, each asked of the metadata API. The server
// keeps no list of anybody's pastes, so this page is the same for everyone.
func HandleMine(pages *Pages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		pages.site.Render(w, r, http.StatusOK, pages.mine, site.Page{Title: "My pastes", NoIndex: true})
	})
}
