package api

import (
	"cmp"
	"encoding/hex"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-chi/chi/v5"
	"golang.org/x/text/unicode/norm"

	"pastebin/api/problem"
	"pastebin/api/site"
	"pastebin/paste"
	"pastebin/redact"
	"pastebin/store"
)

// pasteJSON is a paste's metadata as the JSON API shows it.
type pasteJSON struct {
	Code          string     `json:"code"`
	URL           string     `json:"url"`
	RawURL        string     `json:"raw_url"`
	DeleteURL     string     `json:"delete_url,omitempty"`
	DeleteToken   string     `json:"delete_token,omitempty"`
	Size          int64      `json:"size"`
	CreatedAt     time.Time  `json:"created_at"`
	ExpiresAt     *time.Time `json:"expires_at"`
	BurnAfterRead bool       `json:"burn_after_read"`
	Title         string     `json:"title"`
	Language      string     `json:"language"`
	Filename      string     `json:"filename"`
}

func newPasteJSON(p store.Paste, u site.PasteURLs) pasteJSON {
	j := pasteJSON{
		Code: p.Code, URL: u.Page, RawURL: u.Raw, Size: p.Size, CreatedAt: p.CreatedAt.UTC(),
		BurnAfterRead: p.BurnAfterRead, Title: p.Title, Language: p.Language, Filename: p.Filename,
	}
	if !p.ExpiresAt.IsZero() {
		t := p.ExpiresAt.UTC()
		j.ExpiresAt = &t
	}
	return j
}

// handlePasteMeta handles GET /api/v1/pastes/{code}: metadata only, so it never burns a paste.
func handlePasteMeta(st *site.Site, rd *paste.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := rd.Find(r.Context(), chi.URLParam(r, "code"))
		if err != nil {
			st.Error(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		problem.WriteJSON(w, http.StatusOK, newPasteJSON(f.Paste, st.URLs(r, f.Paste.Code)))
	})
}

// handlePasteText handles GET and HEAD (middleware.GetHead) of /raw/{code}, and of /{code} for
// clients that do not ask for HTML. A HEAD is answered without reading S3.
func handlePasteText(st *site.Site, rd *paste.Reader, logger *slog.Logger) http.Handler {
	get, head := handlePasteRaw(st, rd, logger), handlePasteHead(st, rd)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			head.ServeHTTP(w, r)
			return
		}
		get.ServeHTTP(w, r)
	})
}

// handlePasteRaw handles GET /raw/{code}, and GET /{code} for clients that do not ask for HTML:
// the bytes, always as plain text that no browser will run. A paste that burns after reading is
// never read by a GET (handlePasteConsume).
func handlePasteRaw(st *site.Site, rd *paste.Reader, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := rd.Find(r.Context(), chi.URLParam(r, "code"))
		if err != nil {
			st.Error(w, r, err)
			return
		}
		if f.Paste.BurnAfterRead {
			st.Error(w, r, readWithPost(st.URLs(r, f.Paste.Code)))
			return
		}
		setRawHeaders(w.Header(), r, f.Paste)
		if etagMatches(r, f.Paste) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body, err := rd.Body(r.Context(), f)
		if err != nil {
			st.Error(w, r, err)
			return
		}
		defer body.Close()
		w.Header().Set("Content-Length", strconv.FormatInt(f.Paste.Size, 10))
		if _, err := io.Copy(w, body); err != nil {
			logger.WarnContext(r.Context(), "raw read cut short", "code_hash", redact.Code(f.Paste.Code), "err", err)
		}
	})
}

// handlePasteHead handles HEAD of the raw text: the headers handlePasteRaw would answer, found
// without reading S3.
func handlePasteHead(st *site.Site, rd *paste.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := rd.Find(r.Context(), chi.URLParam(r, "code"))
		if err == nil && f.Paste.BurnAfterRead {
			err = readWithPost(st.URLs(r, f.Paste.Code))
		}
		if err != nil {
			st.Error(w, r, err)
			return
		}
		setRawHeaders(w.Header(), r, f.Paste)
		if etagMatches(r, f.Paste) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(f.Paste.Size, 10))
		w.WriteHeader(http.StatusOK)
	})
}

// setRawHeaders marks the bytes as plain text a browser must neither sniff nor run, whatever they hold.
func setRawHeaders(h http.Header, r *http.Request, p store.Paste) {
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("X-Robots-Tag", "noindex") // a public link is not an invitation to put the text in a search index
	h.Set("ETag", etag(p))
	// Revalidate on every use: a deleted paste must not live on in a browser cache (invariant 5).
	h.Set("Cache-Control", "no-cache")
	setExpiresHeader(h, p.ExpiresAt)
	if _, download := r.URL.Query()["download"]; download {
		h.Set("Content-Disposition", attachment(p))
	}
}

// attachment is the Content-Disposition of a paste's download, named after its file name (else its
// code). A name outside ASCII goes in filename* (RFC 8187), after an ASCII filename= for the
// clients that read only that one, curl -J among them (RFC 6266, appendix D).
func attachment(p store.Paste) string {
	name := cmp.Or(p.Filename, p.Code+".txt")
	ascii := asciiFilename(name, p.Code)
	cd := mime.FormatMediaType("attachment", map[string]string{"filename": ascii})
	if ascii != name {
		// mime writes a value outside ASCII as filename*= alone.
		cd += strings.TrimPrefix(mime.FormatMediaType("attachment", map[string]string{"filename": name}), "attachment")
	}
	return cd
}

// asciiFilename is name in printable ASCII: accents dropped, anything else outside ASCII replaced
// by one "_" per run, the extension kept. A name with nothing left of its stem becomes stem's.
func asciiFilename(name, stem string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(name) {
		switch {
		case unicode.Is(unicode.Mn, r): // the accent of a decomposed letter
		case r >= ' ' && r < unicode.MaxASCII:
			b.WriteRune(r)
		case !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	ascii := b.String()
	ext := path.Ext(ascii)
	if strings.Trim(strings.TrimSuffix(ascii, ext), "_ ") == "" {
		return stem + ext
	}
	return ascii
}

// etag is the paste's content hash: the same bytes, the same tag.
func etag(p store.Paste) string { return `"` + hex.EncodeToString(p.ContentHash) + `"` }

func etagMatches(r *http.Request, p store.Paste) bool {
	inm := r.Header.Get("If-None-Match")
	if inm == "" {
		return false
	}
	tag := etag(p)
	for _, t := range strings.Split(inm, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == tag || t == "*" {
			return true
		}
	}
	return false
}
