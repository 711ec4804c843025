package api

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/go-chi/chi/v5"
)

// staticFS holds the stylesheets, scripts and icons of the web pages. Every one is served by the
// binary itself: the pages fetch nothing from anywhere else.
//
//go:embed static
var staticFS embed.FS

// asset is one static file, addressed by a hash of its bytes. A new version has a new address, so
// browsers may keep each one for a year without ever revalidating it.
type asset struct {
	body        []byte
	contentType string
	hash        string
}

// assets are the static files by name.
type assets map[string]asset

// newAssets reads the embedded static files and adds generated ones (the highlighting styles).
func newAssets(generated map[string][]byte) assets {
	a := assets{}
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		panic("embedded static files: " + err.Error()) // only a broken build gets here
	}
	for _, e := range entries {
		body, err := fs.ReadFile(staticFS, "static/"+e.Name())
		if err != nil {
			panic("embedded static files: " + err.Error())
		}
		a.add(e.Name(), body)
	}
	for name, body := range generated {
		a.add(name, body)
	}
	return a
}

func (a assets) add(name string, body []byte) {
	sum := sha256.Sum256(body)
	a[name] = asset{body: body, contentType: assetType(name), hash: hex.EncodeToString(sum[:6])}
}

func assetType(name string) string {
	switch path.Ext(name) {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// url is where a page links the asset. It panics on a name that is not embedded, which the
// template tests catch, rather than render a page with a dead link.
func (a assets) url(name string) string {
	f, ok := a[name]
	if !ok {
		panic("no static asset " + strconv.Quote(name))
	}
	return "/static/" + f.hash + "/" + name
}

// handleStatic handles GET /static/{hash}/{name}. Only the current hash answers: an old one would
// otherwise be cached for a year under content it does not name.
func handleStatic(ps *pasteService, a assets) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := a[chi.URLParam(r, "name")]
		if !ok || f.hash != chi.URLParam(r, "hash") {
			ps.writeError(w, r, errRouteNotFound.withDetail("There is no such file."))
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		h.Set("Content-Length", strconv.Itoa(len(f.body)))
		_, _ = w.Write(f.body)
	})
}
