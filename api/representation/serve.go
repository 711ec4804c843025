// Package representation answers a read of a paste's bytes in the form the request asks for: the
// content coding its Accept-Encoding takes (the stored zstd frame as it is, gzip transcoded on the
// way, or the original bytes), one byte range of the original bytes (Range, If-Range), or 304
// (If-None-Match), each form with a strong ETag of its own.
package representation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"pastebin/blob/codec"
)

// Content is a paste's bytes as stored, and what the answer's headers need to know of them.
type Content struct {
	Hash       []byte // SHA-256 of the original bytes: every ETag starts with it
	Size       int64  // of the original bytes
	Encoding   codec.Encoding
	StoredSize int64  // of the stored blob
	BlobKey    string // the stored blob's key, which names the zstd form (the zstd ETag)
	// Key names this paste's blob in the Server's form cache: the paste's code and BlobKey. Empty
	// (a consumed paste, which nobody reads again) keeps no form.
	Key string
	// Stored is the stored blob when it is in memory (a cache hit, a consumed paste); else Open
	// fetches it, and is called only when a body is sent.
	Stored []byte
	// KeptGzip, when set, fetches the gzip form of the original bytes (codec.Gzip's, of
	// codec.GzipVersion) kept elsewhere with Stored (the cache holds it), or nil: a gzip answer that
	// finds no form kept here asks it before it transcodes.
	KeptGzip func(context.Context) []byte
	Open     func(context.Context) (io.ReadCloser, error)
}

// ETag is the strong validator of the content in coding: the original bytes keep the content's
// hash alone (as before compression), the stored zstd frame adds its blob, the gzip form the
// transcoder's version.
func (c Content) ETag(coding string) string {
	h := hex.EncodeToString(c.Hash)
	switch coding {
	case codingZstd:
		sum := sha256.Sum256([]byte(c.BlobKey))
		return `"` + h + "-zstd-" + hex.EncodeToString(sum[:4]) + `"`
	case codingGzip:
		return `"` + h + "-gzip" + codec.GzipVersion + `"`
	}
	return `"` + h + `"`
}

// CutShort is a failure after the answer's headers went out: nothing else can be answered, and
// the client sees a body cut short. The caller logs it.
type CutShort struct{ Err error }

func (e *CutShort) Error() string { return "answer cut short: " + e.Err.Error() }
func (e *CutShort) Unwrap() error { return e.Err }

// Server answers reads with codings made by a codec, keeping the forms that cost work to make.
type Server struct {
	codec *codec.Codec
	forms *formCache
}

// NewServer returns a Server over cd that keeps up to formBytes of decoded and gzip forms (0: none).
func NewServer(cd *codec.Codec, formBytes int64) *Server {
	return &Server{codec: cd, forms: newFormCache(formBytes)}
}

// Keep keeps the forms of a paste's blob made elsewhere (the read that filled the cache made them):
// its original bytes and their gzip form (codec.Gzip's), under key (Content.Key).
func (s *Server) Keep(key string, original, gzip []byte) {
	s.forms.add(formID{key, codingIdentity}, original)
	s.forms.add(formID{key, codingGzip}, gzip)
}

// Serve answers r with c. A GET or HEAD gets validators and ranges: ETag, Accept-Ranges, 304 on a
// matching If-None-Match, 206 for one satisfiable range of the original bytes (200 with the whole
// for several: RFC 9110 lets a server ignore a Range), ErrUnsatisfiable (with Content-Range: bytes
// */size set) for none; any other method (the POST that consumes a paste) gets the bytes alone.
// A HEAD never calls c.Open. The caller sets the other headers first, and answers an error Serve
// returns, unless it is a *CutShort: then the answer was already under way.
func (s *Server) Serve(w http.ResponseWriter, r *http.Request, c Content) error {
	h := w.Header()
	addVary(h, "Accept-Encoding")
	coding := chooseCoding(r.Header, c)
	validated := r.Method == http.MethodGet || r.Method == http.MethodHead
	if !validated {
		return s.send(w, r, c, coding, nil)
	}
	h.Set("Accept-Ranges", "bytes")
	rng, err := requestedRange(r, c)
	if rng != nil || errors.Is(err, ErrUnsatisfiable) {
		coding = codingIdentity // ranges are of the original bytes
	}
	tag := c.ETag(coding)
	h.Set("ETag", tag)
	if noneMatch(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if err != nil {
		h.Del("ETag") // the error's answer is no form of the content
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(c.Size, 10))
		return err
	}
	return s.send(w, r, c, coding, rng)
}

// requestedRange is the one range a GET asks for, if its If-Range holds: nil for a whole answer
// (no Range, an invalid one, several ranges), ErrUnsatisfiable when no range is.
func requestedRange(r *http.Request, c Content) (*Range, error) {
	header := r.Header.Get("Range")
	if r.Method != http.MethodGet || header == "" || !ifRangeHolds(r.Header.Get("If-Range"), c.ETag(codingIdentity)) {
		return nil, nil
	}
	ranges, err := ParseRange(header, c.Size)
	switch {
	case errors.Is(err, ErrUnsatisfiable):
		return nil, err
	case err != nil || len(ranges) > 1:
		return nil, nil
	}
	return &ranges[0], nil
}

// ifRangeHolds evaluates If-Range (RFC 9110, section 13.1.5): absent, it holds; an entity tag
// holds when it is strongly the identity form's (the one ranges are taken from); a date never
// holds, since these answers carry no Last-Modified.
func ifRangeHolds(ifRange, identityTag string) bool {
	ifRange = strings.TrimSpace(ifRange)
	return ifRange == "" || ifRange == identityTag
}

// noneMatch evaluates If-None-Match by the weak comparison (RFC 9110, section 13.1.2).
func noneMatch(header, tag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == tag || t == "*" {
			return true
		}
	}
	return false
}

// send writes the status, the coding's headers and, but for a HEAD, the body.
func (s *Server) send(w http.ResponseWriter, r *http.Request, c Content, coding string, rng *Range) error {
	h := w.Header()
	status, length := http.StatusOK, c.Size
	switch {
	case rng != nil:
		status, length = http.StatusPartialContent, rng.Length
		h.Set("Content-Range", rng.contentRange(c.Size))
	case coding == codingZstd:
		length = c.StoredSize
	case coding == codingGzip && r.Method != http.MethodHead:
		length = -1 // known once transcoded (memoryBody), or never: chunked
	case coding == codingGzip:
		length = -1 // a HEAD transcodes nothing: RFC 9110 lets it leave the length out
	}
	if coding != codingIdentity {
		h.Set("Content-Encoding", coding)
	}
	if length >= 0 {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return nil
	}
	body, transcoded, err := s.openBody(r.Context(), c, coding, rng)
	if err != nil {
		for _, name := range []string{"Content-Encoding", "Content-Length", "Content-Range", "ETag"} {
			h.Del(name) // the error's answer is no form of the content
		}
		return err
	}
	defer body.Close()
	if m, ok := body.(memBody); ok && transcoded {
		h.Set("Content-Length", strconv.Itoa(m.Len()))
	}
	w.WriteHeader(status)
	if coding == codingGzip && !transcoded {
		_, err = s.codec.Gzip(w, body)
	} else {
		_, err = io.Copy(w, body)
	}
	if err != nil {
		return &CutShort{err}
	}
	return nil
}

// openBody opens the bytes of the answer: the stored blob as it is for zstd, else the original
// bytes, skipped and cut to rng. For gzip, transcoded says whether they are gzip already (a form
// made in memory), else they are to be transcoded as they are written.
func (s *Server) openBody(ctx context.Context, c Content, coding string, rng *Range) (body io.ReadCloser, transcoded bool, err error) {
	if c.Stored != nil {
		return s.memoryBody(ctx, c, coding, rng)
	}
	stored, err := c.Open(ctx)
	if err != nil {
		return nil, false, err
	}
	enc, size := c.Encoding, c.Size
	if coding == codingZstd {
		enc, size = codec.Identity, c.StoredSize // sent as it is, checked for its length alone
	}
	dec, err := s.codec.NewReader(stored, enc, size)
	if err != nil {
		stored.Close()
		return nil, false, err
	}
	rc := closers{Reader: dec, close: []io.Closer{dec, stored}}
	if rng != nil {
		// A range of a compressed blob decodes what comes before it and drops it.
		if _, err := io.CopyN(io.Discard, dec, rng.Start); err != nil {
			rc.Close()
			return nil, false, fmt.Errorf("skip to the range: %w", err)
		}
		rc.Reader = io.LimitReader(dec, rng.Length)
	}
	return rc, false, nil
}

// memoryBody is openBody of a blob in memory: decoded whole, which for the small blobs a cache
// holds costs less than a stream decoder's set-up, and gzip made whole too (unless c.KeptGzip has
// it); both forms are kept.
func (s *Server) memoryBody(ctx context.Context, c Content, coding string, rng *Range) (io.ReadCloser, bool, error) {
	switch coding {
	case codingZstd:
		return inMemory(c.Stored), false, nil
	case codingGzip:
		form := formKey(c, codingGzip)
		if gz, ok := s.forms.get(form); ok {
			return inMemory(gz), true, nil
		}
		if c.KeptGzip != nil {
			if gz := c.KeptGzip(ctx); gz != nil {
				s.forms.add(form, gz)
				return inMemory(gz), true, nil
			}
		}
		data, err := s.original(c)
		if err != nil {
			return nil, false, err
		}
		gz, err := s.codec.GzipBytes(data)
		if err != nil {
			return nil, false, err
		}
		s.forms.add(form, gz)
		return inMemory(gz), true, nil
	}
	data, err := s.original(c)
	if err != nil {
		return nil, false, err
	}
	if rng != nil {
		data = data[rng.Start : rng.Start+rng.Length]
	}
	return inMemory(data), false, nil
}

// formKey names c's form in coding in the form cache; kept nowhere when c has no Key.
func formKey(c Content, coding string) formID { return formID{c.Key, coding} }

// memBody is bytes in memory, whose length is known before they are sent.
type memBody struct{ *bytes.Reader }

func (memBody) Close() error { return nil }

func inMemory(b []byte) memBody { return memBody{bytes.NewReader(b)} }

// original is the original bytes of a blob in memory: its decoded form, kept, when there is one.
func (s *Server) original(c Content) ([]byte, error) {
	if c.Encoding == codec.Identity {
		return s.codec.Decode(c.Stored, c.Encoding, c.Size)
	}
	form := formKey(c, codingIdentity)
	if data, ok := s.forms.get(form); ok {
		return data, nil
	}
	data, err := s.codec.Decode(c.Stored, c.Encoding, c.Size)
	if err == nil {
		s.forms.add(form, data)
	}
	return data, err
}

// closers reads from Reader and closes each of close, in order.
type closers struct {
	io.Reader
	close []io.Closer
}

func (c closers) Close() error {
	var errs []error
	for _, cl := range c.close {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}

// addVary adds name to the Vary header once.
func addVary(h http.Header, name string) {
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n == "*" || strings.EqualFold(n, name) {
				return
			}
		}
	}
	h.Add("Vary", name)
}
