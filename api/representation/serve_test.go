package representation_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"pastebin/api/representation"
	"pastebin/blob/codec"
)

var text = []byte(strings.Repeat("package main\n\nfunc main() { println(\"hello\") }\n", 100))

// content is text as the service stores it, in memory (a cache hit) or fetched from S3 (Open).
func content(t *testing.T, cd *codec.Codec, data []byte, inMemory bool) representation.Content {
	t.Helper()
	stored, enc := cd.Compress(data)
	sum := sha256.Sum256(data)
	c := representation.Content{
		Hash: sum[:], Size: int64(len(data)), Encoding: enc, StoredSize: int64(len(stored)), BlobKey: "blobs/ab/key.1",
	}
	if inMemory {
		c.Stored = stored
	} else {
		c.Open = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(stored)), nil }
	}
	return c
}

type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func serve(t *testing.T, cd *codec.Codec, c representation.Content, method string, header ...string) answer {
	t.Helper()
	r := httptest.NewRequest(method, "/raw/abc", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	err := representation.NewServer(cd, 0).Serve(w, r, c)
	return answer{status: w.Code, header: w.Header(), body: w.Body.Bytes(), err: err}
}

// decoded is the body with its Content-Encoding undone.
func decoded(t *testing.T, a answer) []byte {
	t.Helper()
	switch a.header.Get("Content-Encoding") {
	case "":
		return a.body
	case "zstd":
		d, err := zstd.NewReader(bytes.NewReader(a.body), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		got, err := io.ReadAll(d)
		if err != nil {
			t.Fatal(err)
		}
		return got
	case "gzip":
		z, err := kgzip.NewReader(bytes.NewReader(a.body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(z)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Fatalf("Content-Encoding %q", a.header.Get("Content-Encoding"))
	return nil
}

func newCodec(t *testing.T) *codec.Codec {
	t.Helper()
	return codec.New()
}

func TestCodingRoundTrips(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	for _, tc := range []struct {
		accept, want string
	}{
		{"", ""},
		{"gzip", "gzip"},
		{"x-gzip", "gzip"},
		{"gzip, deflate, br, zstd", "zstd"},
		{"zstd;q=0.5, gzip", "gzip"},
		{"*", "zstd"},
		{"br", ""},
		{"zstd;q=0, gzip;q=0", ""},
		{"identity;q=0, gzip;q=0.1", "gzip"},
		{"identity;q=0", ""}, // nothing acceptable offered: identity all the same
	} {
		for _, inMemory := range []bool{true, false} {
			c := content(t, cd, text, inMemory)
			a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", tc.accept)
			if a.err != nil || a.status != http.StatusOK {
				t.Fatalf("Accept-Encoding %q: %d, %v", tc.accept, a.status, a.err)
			}
			if got := a.header.Get("Content-Encoding"); got != tc.want {
				t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tc.accept, got, tc.want)
			}
			if !bytes.Equal(decoded(t, a), text) {
				t.Errorf("Accept-Encoding %q, in memory %v: the body does not decode to the text", tc.accept, inMemory)
			}
			if cl := a.header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(a.body)) {
				t.Errorf("Accept-Encoding %q: Content-Length %s for %d bytes", tc.accept, cl, len(a.body))
			}
			if a.header.Get("Vary") != "Accept-Encoding" || a.header.Get("Accept-Ranges") != "bytes" {
				t.Errorf("Vary %q, Accept-Ranges %q", a.header.Get("Vary"), a.header.Get("Accept-Ranges"))
			}
		}
	}
}

// A blob stored as it is (before compression existed, or one that does not compress) is sent as
// it is, whatever the client takes: no transcode of what would not shrink.
func TestIdentityBlobSentAsItIs(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	sum := sha256.Sum256(text)
	c := representation.Content{Hash: sum[:], Size: int64(len(text)), StoredSize: int64(len(text)), BlobKey: "k", Stored: text}
	a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", "zstd, gzip")
	if a.header.Get("Content-Encoding") != "" || !bytes.Equal(a.body, text) {
		t.Fatalf("Content-Encoding %q, body equal %v", a.header.Get("Content-Encoding"), bytes.Equal(a.body, text))
	}
	if got, want := a.header.Get("ETag"), c.ETag("identity"); got != want {
		t.Errorf("ETag %s, want %s", got, want)
	}
}

func TestETagPerCoding(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	c := content(t, cd, text, true)
	tags := map[string]string{}
	for _, accept := range []string{"", "zstd", "gzip"} {
		a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", accept)
		tag := a.header.Get("ETag")
		if !strings.HasPrefix(tag, `"`) || strings.HasPrefix(tag, "W/") {
			t.Errorf("Accept-Encoding %q: ETag %s is not strong", accept, tag)
		}
		if other, dup := tags[tag]; dup {
			t.Errorf("Accept-Encoding %q and %q share ETag %s", accept, other, tag)
		}
		tags[tag] = accept
		// The same coding revalidates; another coding's tag does not.
		if a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", accept, "If-None-Match", tag); a.status != http.StatusNotModified || len(a.body) != 0 {
			t.Errorf("Accept-Encoding %q with its own tag: %d", accept, a.status)
		}
		if a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", accept, "If-None-Match", `W/`+tag+`, "x"`); a.status != http.StatusNotModified {
			t.Errorf("Accept-Encoding %q with its weak tag in a list: %d", accept, a.status)
		}
	}
	for tag, accept := range tags {
		for _, other := range []string{"", "zstd", "gzip"} {
			if other == accept {
				continue
			}
			if a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", other, "If-None-Match", tag); a.status != http.StatusOK {
				t.Errorf("Accept-Encoding %q with %q's tag: %d, want 200", other, accept, a.status)
			}
		}
	}
}

func TestHeadSendsGetsHeaders(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	c := content(t, cd, text, false)
	get := c
	c.Open = func(context.Context) (io.ReadCloser, error) { t.Fatal("HEAD opened the blob"); return nil, nil }
	for _, accept := range []string{"", "zstd", "gzip"} {
		h := serve(t, cd, c, http.MethodHead, "Accept-Encoding", accept)
		g := serve(t, cd, get, http.MethodGet, "Accept-Encoding", accept)
		if h.status != g.status || len(h.body) != 0 {
			t.Errorf("Accept-Encoding %q: HEAD %d with %d bytes, GET %d", accept, h.status, len(h.body), g.status)
		}
		for _, name := range []string{"Content-Encoding", "Content-Length", "ETag", "Vary", "Accept-Ranges"} {
			if h.header.Get(name) != g.header.Get(name) {
				t.Errorf("Accept-Encoding %q: HEAD %s %q, GET %q", accept, name, h.header.Get(name), g.header.Get(name))
			}
		}
	}
}

func TestRanges(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	size := strconv.Itoa(len(text))
	for _, inMemory := range []bool{true, false} {
		c := content(t, cd, text, inMemory)
		identity := c.ETag("identity")
		for _, tc := range []struct {
			name    string
			header  []string
			status  int
			body    []byte
			cRange  string
			encoded bool // the whole, zstd
		}{
			{"first bytes", []string{"Range", "bytes=0-6"}, 206, text[:7], "bytes 0-6/" + size, false},
			{"suffix", []string{"Range", "bytes=-5"}, 206, text[len(text)-5:], "bytes " + strconv.Itoa(len(text)-5) + "-" + strconv.Itoa(len(text)-1) + "/" + size, false},
			{"open end", []string{"Range", "bytes=4000-"}, 206, text[4000:], "bytes 4000-" + strconv.Itoa(len(text)-1) + "/" + size, false},
			{"of the original bytes, whatever the client takes", []string{"Range", "bytes=13-16", "Accept-Encoding", "zstd"}, 206, text[13:17], "bytes 13-16/" + size, false},
			{"several: the whole", []string{"Range", "bytes=0-1,5-6", "Accept-Encoding", "zstd"}, 200, text, "", true},
			{"invalid: the whole", []string{"Range", "bytes=5-1"}, 200, text, "", false},
			{"If-Range matches", []string{"Range", "bytes=0-6", "If-Range", identity}, 206, text[:7], "bytes 0-6/" + size, false},
			{"If-Range of another form", []string{"Range", "bytes=0-6", "If-Range", c.ETag("zstd"), "Accept-Encoding", "zstd"}, 200, text, "", true},
			{"If-Range weak", []string{"Range", "bytes=0-6", "If-Range", "W/" + identity}, 200, text, "", false},
			{"If-Range a date", []string{"Range", "bytes=0-6", "If-Range", "Sat, 01 Jan 2000 00:00:00 GMT"}, 200, text, "", false},
		} {
			a := serve(t, cd, c, http.MethodGet, tc.header...)
			if a.err != nil || a.status != tc.status {
				t.Errorf("%s (in memory %v): %d, %v; want %d", tc.name, inMemory, a.status, a.err, tc.status)
				continue
			}
			if !bytes.Equal(decoded(t, a), tc.body) || a.header.Get("Content-Range") != tc.cRange {
				t.Errorf("%s (in memory %v): %d bytes, Content-Range %q; want %d bytes, %q", tc.name, inMemory,
					len(decoded(t, a)), a.header.Get("Content-Range"), len(tc.body), tc.cRange)
			}
			if (a.header.Get("Content-Encoding") == "zstd") != tc.encoded {
				t.Errorf("%s: Content-Encoding %q", tc.name, a.header.Get("Content-Encoding"))
			}
			if a.header.Get("Content-Length") != strconv.Itoa(len(a.body)) {
				t.Errorf("%s: Content-Length %s for %d bytes", tc.name, a.header.Get("Content-Length"), len(a.body))
			}
			if tc.status == 206 && a.header.Get("ETag") != identity {
				t.Errorf("%s: ETag %s of a range, want the original bytes' %s", tc.name, a.header.Get("ETag"), identity)
			}
		}
	}
}

func TestUnsatisfiableRange(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	c := content(t, cd, text, false)
	c.Open = func(context.Context) (io.ReadCloser, error) { t.Fatal("416 opened the blob"); return nil, nil }
	for _, header := range []string{"bytes=" + strconv.Itoa(len(text)) + "-", "bytes=-0", "bytes=99999-99999"} {
		a := serve(t, cd, c, http.MethodGet, "Range", header, "Accept-Encoding", "zstd")
		if !errors.Is(a.err, representation.ErrUnsatisfiable) || a.status != http.StatusOK || len(a.body) != 0 {
			t.Errorf("Range %q: error %v, written %d with %d bytes", header, a.err, a.status, len(a.body))
		}
		if got, want := a.header.Get("Content-Range"), "bytes */"+strconv.Itoa(len(text)); got != want {
			t.Errorf("Range %q: Content-Range %q, want %q", header, got, want)
		}
	}
}

// A HEAD, and a POST (the consuming read), take no range: RFC 9110 defines Range for GET alone.
func TestRangeOnlyOnGet(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	c := content(t, cd, text, true)
	a := serve(t, cd, c, http.MethodHead, "Range", "bytes=0-1")
	if a.status != http.StatusOK || a.header.Get("Content-Length") != strconv.Itoa(len(text)) {
		t.Errorf("HEAD with Range: %d, Content-Length %s", a.status, a.header.Get("Content-Length"))
	}
	a = serve(t, cd, c, http.MethodPost, "Range", "bytes=0-1", "Accept-Encoding", "gzip", "If-None-Match", "*")
	if a.status != http.StatusOK || !bytes.Equal(decoded(t, a), text) {
		t.Fatalf("POST: %d, %v", a.status, a.err)
	}
	if a.header.Get("ETag") != "" || a.header.Get("Accept-Ranges") != "" || a.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("POST: ETag %q, Accept-Ranges %q, Content-Encoding %q", a.header.Get("ETag"),
			a.header.Get("Accept-Ranges"), a.header.Get("Content-Encoding"))
	}
}

// A blob that does not decode to its size is answered as an error before anything is written,
// when it is in memory; from a stream, what was sent is cut short.
func TestCorruptBlob(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	c := content(t, cd, text, true)
	c.Size++
	a := serve(t, cd, c, http.MethodGet)
	if !errors.Is(a.err, codec.ErrCorrupt) || a.header.Get("Content-Length") != "" || len(a.body) != 0 {
		t.Errorf("in memory: %v, Content-Length %q, %d bytes", a.err, a.header.Get("Content-Length"), len(a.body))
	}
	c = content(t, cd, text, false)
	c.Size++
	a = serve(t, cd, c, http.MethodGet)
	var cut *representation.CutShort
	if !errors.As(a.err, &cut) || !errors.Is(a.err, codec.ErrCorrupt) {
		t.Errorf("streamed: %v, want CutShort of ErrCorrupt", a.err)
	}
}

// TestFormsKept: the original bytes of a compressed blob, and its gzip, are made once per paste
// and kept; another paste of the same blob makes its own.
func TestFormsKept(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	srv := representation.NewServer(cd, 1<<20)
	c := content(t, cd, text, true)
	c.Key = "code1 " + c.BlobKey
	read := func(c representation.Content, accept string) (*httptest.ResponseRecorder, error) {
		r := httptest.NewRequest(http.MethodGet, "/raw/code1", nil)
		r.Header.Set("Accept-Encoding", accept)
		w := httptest.NewRecorder()
		return w, srv.Serve(w, r, c)
	}
	for _, accept := range []string{"identity", "gzip"} {
		w, err := read(c, accept)
		if err != nil {
			t.Fatal(err)
		}
		if accept == "gzip" && w.Header().Get("Content-Length") != strconv.Itoa(w.Body.Len()) {
			t.Errorf("gzip made in memory: Content-Length %q for %d bytes", w.Header().Get("Content-Length"), w.Body.Len())
		}
	}
	broken := c
	broken.Stored = []byte("not a zstd frame")
	for _, accept := range []string{"identity", "gzip"} {
		w, err := read(broken, accept)
		if err != nil || !bytes.Equal(decoded(t, answer{header: w.Header(), body: w.Body.Bytes()}), text) {
			t.Errorf("Accept-Encoding %q, read again: %v; want the kept form", accept, err)
		}
	}
	broken.Key = "code2 " + c.BlobKey
	if _, err := read(broken, "identity"); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("another paste of the blob: %v, want its own decode (ErrCorrupt)", err)
	}
	// Without a Key (a consumed paste) nothing is kept.
	c.Key, broken.Key = "", ""
	if _, err := read(c, "identity"); err != nil {
		t.Fatal(err)
	}
	if _, err := read(broken, "identity"); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("no Key: %v, want its own decode (ErrCorrupt)", err)
	}
}

// TestSmallPastesNotGzipped: a paste of 1 KiB or less goes to a gzip-only client as it is (a
// transcode would save less than a TCP segment); a zstd client still gets the stored frame.
func TestSmallPastesNotGzipped(t *testing.T) {
	t.Parallel()
	cd := newCodec(t)
	small := bytes.Repeat([]byte("0123456789abcde\n"), 64) // 1 KiB
	c := content(t, cd, small, true)
	if a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", "gzip"); a.header.Get("Content-Encoding") != "" || !bytes.Equal(a.body, small) {
		t.Errorf("gzip client: Content-Encoding %q", a.header.Get("Content-Encoding"))
	}
	if a := serve(t, cd, c, http.MethodGet, "Accept-Encoding", "gzip, zstd"); a.header.Get("Content-Encoding") != "zstd" {
		t.Errorf("zstd client: Content-Encoding %q", a.header.Get("Content-Encoding"))
	}
}
