package site

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
)

// staticFS holds the stylesheets, scripts and icons of the layout. Every static file is served by
// the binary itself: the pages fetch nothing from anywhere else.
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

// newAssets holds the site's own static files and those of files.
func newAssets(files ...map[string][]byte) assets {
	a := assets{}
	for _, set := range append([]map[string][]byte{Files(staticFS, "static")}, files...) {
		for name, body := range set {
			a.add(name, body)
		}
	}
	return a
}

// Files reads the files of dir in fsys by name: a package's embedded static files, for New.
func Files(fsys fs.FS, dir string) map[string][]byte {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic("embedded static files: " + err.Error()) // only a broken build gets here
	}
	files := map[string][]byte{}
	for _, e := range entries {
		body, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			panic("embedded static files: " + err.Error())
		}
		files[e.Name()] = body
	}
	return files
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

// HandleStatic handles GET /static/{hash}/{name}. Only the current hash answers: an old one would
// otherwise be cached for a year under content it does not name.
func (s *Site) HandleStatic() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := s.assets[chi.URLParam(r, "name")]
		if !ok || f.hash != chi.URLParam(r, "hash") {
			s.Error(w, r, problem.RouteNotFound.WithDetail("There is no such file."))
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		h.Set("Content-Length", strconv.Itoa(len(f.body)))
		_, _ = w.Write(f.body)
	})
}
