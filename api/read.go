package api

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/go-chi/chi/v5"
	"golang.org/x/text/unicode/norm"

	"pastebin/api/problem"
	"pastebin/api/representation"
	"pastebin/api/site"
	"pastebin/blob/codec"
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
	MaxViews      *int       `json:"max_views"`  // null: no limit
	ViewsLeft     *int       `json:"views_left"` // null: no limit
	Encryption    *string    `json:"encryption"` // null: plain text
	Title         string     `json:"title"`
	Language      string     `json:"language"`
	Filename      string     `json:"filename"`
}

func newPasteJSON(p store.Paste, u site.PasteURLs) pasteJSON {
	j := pasteJSON{
		Code: p.Code, URL: u.Page, RawURL: u.Raw, Size: p.Size, CreatedAt: p.CreatedAt.UTC(),
		BurnAfterRead: p.BurnAfterRead(), Title: p.Title, Language: p.Language, Filename: p.Filename,
	}
	if !p.ExpiresAt.IsZero() {
		t := p.ExpiresAt.UTC()
		j.ExpiresAt = &t
	}
	if p.ViewLimited() {
		j.MaxViews, j.ViewsLeft = &p.MaxViews, &p.ViewsLeft
	}
	if p.Encryption != "" {
		j.Encryption = &p.Encryption
	}
	return j
}

// handlePasteMeta handles GET /api/v1/pastes/{code}: metadata only, so it never takes a view.
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
// clients that do not ask for HTML: the bytes, always as plain text that no browser will run (an
// encrypted paste's as bytes), in the coding Accept-Encoding takes, or the Range asked for
// (representation.Server). A HEAD is answered without reading S3. A paste with a view limit is
// never read by a GET (handlePasteConsume).
func handlePasteText(st *site.Site, rd *paste.Reader, reps *representation.Server, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := rd.Find(r.Context(), chi.URLParam(r, "code"))
		if err == nil && !paste.OpenToGet(f.Paste) {
			err = readWithPost(f.Paste, st.URLs(r, f.Paste.Code))
		}
		if err != nil {
			st.Error(w, r, err)
			return
		}
		setRawHeaders(w.Header(), r, f.Paste)
		c, err := storedContent(f.Paste, f.StoredBytes(), func(ctx context.Context) (io.ReadCloser, error) {
			return rd.Stored(ctx, f)
		})
		c.Key = formsKey(f.Paste)
		// A cache hit's gzip form kept in Redis, for the pastes that may be answered in gzip.
		if f.StoredBytes() != nil && c.Encoding == codec.Zstd && c.Size > codec.MinGzipSize {
			c.KeptGzip = func(ctx context.Context) []byte { return rd.KeptGzip(ctx, f) }
		}
		if err == nil {
			err = reps.Serve(w, r, c)
		}
		answerServeError(w, r, st, logger, f.Paste, err)
	})
}

// formsKey names p's blob in representation.Server's kept forms: p's alone, so that no read is
// faster because another paste of the same bytes was read.
func formsKey(p store.Paste) string { return p.Code + " " + p.BlobKey }

// storedContent is p's bytes as stored, for representation.Server: stored when they are in
// memory, else open fetches them.
func storedContent(p store.Paste, stored []byte, open func(context.Context) (io.ReadCloser, error)) (representation.Content, error) {
	enc, err := codec.ParseEncoding(p.Encoding)
	return representation.Content{
		Hash: p.ContentHash, Size: p.Size, Encoding: enc, StoredSize: p.StoredSize, BlobKey: p.BlobKey,
		Stored: stored, Open: open,
	}, err
}

// answerServeError answers what representation.Server.Serve returned: nothing on success; a log
// line once the body was under way; else the error.
func answerServeError(w http.ResponseWriter, r *http.Request, st *site.Site, logger *slog.Logger, p store.Paste, err error) {
	if err == nil {
		return // before errors.As, whose target would cost every read an allocation
	}
	if cut := (*representation.CutShort)(nil); errors.As(err, &cut) {
		logger.WarnContext(r.Context(), "raw read cut short", "code_hash", redact.Code(p.Code), "err", err)
		return
	}
	st.Error(w, r, err)
}

// setRawHeaders marks the bytes as plain text a browser must neither sniff nor run, whatever they
// hold; an encrypted paste's as bytes, with the format its reader decrypts them by.
func setRawHeaders(h http.Header, r *http.Request, p store.Paste) {
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if p.Encryption != "" {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Paste-Encryption", p.Encryption)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("X-Robots-Tag", "noindex") // a public link is not an invitation to put the text in a search index
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
	if p.Encryption != "" {
		name = p.Code + ".bin" // the ciphertext; its name is inside it
	}
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
