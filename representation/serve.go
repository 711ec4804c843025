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

	"pastebin/codec"
)

// Content is a paste's bytes as stored, and what the answer's headers need to know of them.
type Content struct {
	Hash       []byte // SHA-256 of the original bytes: every ETag starts with it
	Size       int64  // of the original bytes
	Encoding   codec.Encoding
	StoredSize int64  // of the stored blob
	BlobKey    string // the stored blob's key, which names the zstd form (the zstd ETag)
	// Stored is the stored blob when it is in memory (a cache hit, a consumed paste); else Open
	// fetches it, and is called only when a body is sent.
	Stored []byte
	Open   func(context.Context) (io.ReadCloser, error)
}

// gzipVersion names the transcoder in the gzip form's ETag: bump it when the gzip settings (or a
// library update) change the bytes the same content transcodes to.
const gzipVersion = "1"

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
		return `"` + h + "-gzip" + gzipVersion + `"`
	}
	return `"` + h + `"`
}

// CutShort is a failure after the answer's headers went out: nothing else can be answered, and
// the client sees a body cut short. The caller logs it.
type CutShort struct{ Err error }

func (e *CutShort) Error() string { return "answer cut short: " + e.Err.Error() }
func (e *CutShort) Unwrap() error { return e.Err }

// Serve answers r with c. A GET or HEAD gets validators and ranges: ETag, Accept-Ranges, 304 on a
// matching If-None-Match, 206 for one satisfiable range of the original bytes (200 with the whole
// for several: RFC 9110 lets a server ignore a Range), ErrUnsatisfiable (with Content-Range: bytes
// */size set) for none; any other method (the POST that consumes a paste) gets the bytes alone.
// A HEAD never calls c.Open. The caller sets the other headers first, and answers an error Serve
// returns, unless it is a *CutShort: then the answer was already under way.
func Serve(w http.ResponseWriter, r *http.Request, cd *codec.Codec, c Content) error {
	h := w.Header()
	addVary(h, "Accept-Encoding")
	coding := chooseCoding(r.Header, c.Encoding == codec.Zstd)
	validated := r.Method == http.MethodGet || r.Method == http.MethodHead
	if !validated {
		return send(w, r, cd, c, coding, nil)
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
	return send(w, r, cd, c, coding, rng)
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
func send(w http.ResponseWriter, r *http.Request, cd *codec.Codec, c Content, coding string, rng *Range) error {
	h := w.Header()
	status, length := http.StatusOK, c.Size
	switch {
	case rng != nil:
		status, length = http.StatusPartialContent, rng.Length
		h.Set("Content-Range", rng.contentRange(c.Size))
	case coding == codingZstd:
		length = c.StoredSize
	case coding == codingGzip:
		length = -1 // known once transcoded: chunked, or counted by net/http for a short one
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
	body, err := openBody(r.Context(), cd, c, coding, rng)
	if err != nil {
		for _, name := range []string{"Content-Encoding", "Content-Length", "Content-Range", "ETag"} {
			h.Del(name) // the error's answer is no form of the content
		}
		return err
	}
	defer body.Close()
	w.WriteHeader(status)
	if coding == codingGzip {
		_, err = cd.Gzip(w, body)
	} else {
		_, err = io.Copy(w, body)
	}
	if err != nil {
		return &CutShort{err}
	}
	return nil
}

// openBody opens the bytes of the answer: the stored blob as it is for zstd, else the original
// bytes (gzip transcodes them as they are written), skipped and cut to rng.
func openBody(ctx context.Context, cd *codec.Codec, c Content, coding string, rng *Range) (io.ReadCloser, error) {
	if c.Stored != nil {
		return memoryBody(cd, c, coding, rng)
	}
	stored, err := c.Open(ctx)
	if err != nil {
		return nil, err
	}
	enc, size := c.Encoding, c.Size
	if coding == codingZstd {
		enc, size = codec.Identity, c.StoredSize // sent as it is, checked for its length alone
	}
	body, err := cd.NewReader(stored, enc, size)
	if err != nil {
		stored.Close()
		return nil, err
	}
	rc := closers{Reader: body, close: []io.Closer{body, stored}}
	if rng != nil {
		// A range of a compressed blob decodes what comes before it and drops it.
		if _, err := io.CopyN(io.Discard, body, rng.Start); err != nil {
			rc.Close()
			return nil, fmt.Errorf("skip to the range: %w", err)
		}
		rc.Reader = io.LimitReader(body, rng.Length)
	}
	return rc, nil
}

// memoryBody is openBody of a blob in memory: decoded whole, which for the small blobs a cache
// holds costs less than a stream decoder's set-up.
func memoryBody(cd *codec.Codec, c Content, coding string, rng *Range) (io.ReadCloser, error) {
	if coding == codingZstd {
		return io.NopCloser(bytes.NewReader(c.Stored)), nil
	}
	data, err := cd.Decode(c.Stored, c.Encoding, c.Size)
	if err != nil {
		return nil, err
	}
	if rng != nil {
		data = data[rng.Start : rng.Start+rng.Length]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
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
