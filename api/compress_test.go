package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"pastebin/api"
	"pastebin/blob"
	"pastebin/blob/codec"
	"pastebin/cache"
	"pastebin/store"
	"pastebin/store/storetest"
)

// doRaw is do with a client that neither asks for nor undoes a coding of its own (Go's transport
// asks for gzip and decodes it unseen): what the server sent, as it sent it.
func (e *env) doRaw(req *http.Request) response {
	e.t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	e.checkSpec(req, resp, body)
	return response{Response: resp, body: body}
}

// undo returns r's body with its Content-Encoding undone.
func undo(t *testing.T, r response) []byte {
	t.Helper()
	var dec io.Reader
	switch ce := r.Header.Get("Content-Encoding"); ce {
	case "":
		return r.body
	case "zstd":
		d, err := zstd.NewReader(bytes.NewReader(r.body), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		dec = d
	case "gzip":
		z, err := kgzip.NewReader(bytes.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		dec = z
	default:
		t.Fatalf("Content-Encoding %q", ce)
	}
	data, err := io.ReadAll(dec)
	if err != nil {
		t.Fatalf("undo %s: %v", r.Header.Get("Content-Encoding"), err)
	}
	return data
}

// sourceText is text that compresses as source code does, of about n bytes.
func sourceText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("func handler" + strconv.Itoa(i) + "(w http.ResponseWriter, r *http.Request) {\n\tw.Write(nil)\n}\n\n")
	}
	return b.String()
}

// TestCompressionRoundTrips: text is stored compressed (the row says zstd, the object is a smaller
// zstd frame), and every read gives its bytes back in the coding the client takes: identity,
// zstd as stored, gzip transcoded, from S3 (a paste past the cache's size, and the first read of a
// small one) and from Redis alike; HEAD answers the same headers (but gzip's length, known only
// once transcoded); each coding revalidates with its own ETag.
func TestCompressionRoundTrips(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) { c.DecodedCacheBytes = 1 << 20 })) // reads again take the kept forms
	for _, size := range []int{4 << 10, 200 << 10} {                                  // cached with its bytes; streamed from S3 every time
		text := sourceText(size)
		p := e.create(text, "")
		var enc string
		var stored, sizeBytes int64
		var key string
		err := e.store.Pool().QueryRow(context.Background(), `SELECT coalesce(encoding, ''), coalesce(stored_bytes, 0), size_bytes, blob_key
			FROM content WHERE content_hash = sha256($1::bytea)`, []byte(text)).Scan(&enc, &stored, &sizeBytes, &key)
		if err != nil {
			t.Fatal(err)
		}
		obj := readObject(t, e.bucket, key)
		if enc != "zstd" || sizeBytes != int64(len(text)) || stored != int64(len(obj)) || stored*3 > sizeBytes || !bytes.HasPrefix(obj, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			t.Fatalf("%d bytes stored as %q, %d bytes (object %d bytes); want a zstd frame a third the size at most", sizeBytes, enc, stored, len(obj))
		}
		tags := map[string]string{}
		for _, accept := range []string{"identity", "zstd", "gzip", "gzip, deflate, br, zstd"} {
			for range 2 { // the first read of a small paste fills the cache, the second reads it
				for _, path := range []string{"/raw/" + p.code, "/" + p.code} {
					r := e.doRaw(e.request(http.MethodGet, path, nil, "Accept-Encoding", accept))
					if r.StatusCode != http.StatusOK || string(undo(t, r)) != text {
						t.Fatalf("GET %s, Accept-Encoding %q, %d bytes: %d, body not the text", path, accept, size, r.StatusCode)
					}
					checkCodingHeaders(t, r, accept)
					tags[r.Header.Get("Content-Encoding")] = r.Header.Get("ETag")
					head := e.doRaw(e.request(http.MethodHead, path, nil, "Accept-Encoding", accept))
					for _, h := range []string{"Content-Encoding", "Content-Length", "ETag", "Vary", "Accept-Ranges"} {
						if h == "Content-Length" && accept == "gzip" {
							continue // known once transcoded: net/http counts a short GET's, a HEAD has none
						}
						if head.Header.Get(h) != r.Header.Get(h) {
							t.Errorf("HEAD %s, Accept-Encoding %q: %s %q, GET's %q", path, accept, h, head.Header.Get(h), r.Header.Get(h))
						}
					}
					nm := e.doRaw(e.request(http.MethodGet, path, nil, "Accept-Encoding", accept, "If-None-Match", r.Header.Get("ETag")))
					if nm.StatusCode != http.StatusNotModified {
						t.Errorf("GET %s, Accept-Encoding %q with its ETag: %d, want 304", path, accept, nm.StatusCode)
					}
				}
			}
		}
		if page := e.get("/"+p.code, "Accept", "text/html"); page.StatusCode != http.StatusOK || !strings.Contains(page.text(), "handler1") {
			t.Errorf("the page of a compressed paste, %d bytes: %d, without its text", size, page.StatusCode)
		}
		if len(tags) != 3 || tags[""] == tags["zstd"] || tags["zstd"] == tags["gzip"] || tags[""] == tags["gzip"] {
			t.Errorf("ETags by coding %v: want three distinct", tags)
		}
		if sum := sha256.Sum256([]byte(text)); tags[""] != `"`+hexOf(sum[:])+`"` {
			t.Errorf("ETag of the original bytes %s, want their SHA-256 as before", tags[""])
		}
	}
}

func checkCodingHeaders(t *testing.T, r response, accept string) {
	t.Helper()
	want := map[string]string{"identity": "", "zstd": "zstd", "gzip": "gzip", "gzip, deflate, br, zstd": "zstd"}[accept]
	if got := r.Header.Get("Content-Encoding"); got != want {
		t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", accept, got, want)
	}
	if cl := r.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(r.body)) {
		t.Errorf("Accept-Encoding %q: Content-Length %s for %d bytes", accept, cl, len(r.body))
	}
	if want != "gzip" && r.Header.Get("Content-Length") == "" {
		t.Errorf("Accept-Encoding %q: no Content-Length", accept)
	}
	if !strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Accept-Encoding") || r.Header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("Accept-Encoding %q: Vary %q, Accept-Ranges %q", accept, r.Header.Values("Vary"), r.Header.Get("Accept-Ranges"))
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func readObject(t *testing.T, b *blob.Bucket, key string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBlobStoredBeforeCompression: a content row written before compression existed (encoding
// NULL) and its object, the original bytes, written directly: every read serves it as it is,
// whatever the client takes, ranges included.
func TestBlobStoredBeforeCompression(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, size := range []int{3 << 10, 100 << 10} {
		text := sourceText(size)
		sum := sha256.Sum256([]byte(text))
		key, err := blob.NewKey(sum[:])
		if err != nil {
			t.Fatal(err)
		}
		if err := e.bucket.Put(ctx, key, []byte(text)); err != nil {
			t.Fatal(err)
		}
		p, err := e.store.CreatePasteWithBlob(ctx, store.NewPaste{ContentHash: sum[:], Size: int64(len(text)),
			OwnerTokenHash: store.HashToken("t")}, key)
		if err != nil {
			t.Fatal(err)
		}
		if n := e.count(`SELECT count(*) FROM content WHERE content_hash = $1 AND encoding IS NULL AND stored_bytes IS NULL`, sum[:]); n != 1 {
			t.Fatalf("%d rows as before compression, want 1", n)
		}
		for _, accept := range []string{"identity", "zstd", "gzip"} {
			for range 2 {
				r := e.doRaw(e.request(http.MethodGet, "/raw/"+p.Code, nil, "Accept-Encoding", accept))
				if r.StatusCode != http.StatusOK || r.Header.Get("Content-Encoding") != "" || r.text() != text ||
					r.Header.Get("ETag") != `"`+hexOf(sum[:])+`"` {
					t.Fatalf("Accept-Encoding %q: %d, Content-Encoding %q, ETag %s, body the text %v", accept, r.StatusCode,
						r.Header.Get("Content-Encoding"), r.Header.Get("ETag"), r.text() == text)
				}
			}
		}
		r := e.doRaw(e.request(http.MethodGet, "/raw/"+p.Code+"?download", nil, "Range", "bytes=-10"))
		if r.StatusCode != http.StatusPartialContent || r.text() != text[len(text)-10:] {
			t.Errorf("a range of the old blob: %d %q", r.StatusCode, r.body)
		}
	}
}

// TestIncompressibleStoredAsItIs: bytes that do not compress (an encrypted paste's ciphertext) are
// stored as they are.
func TestIncompressibleStoredAsItIs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := make([]byte, 8<<10)
	_, _ = rand.Read(data)
	p := e.create(string(data), "")
	if n := e.count(`SELECT count(*) FROM content WHERE encoding IS NULL AND size_bytes = $1`, len(data)); n != 1 {
		t.Errorf("random bytes: %d rows stored as they are, want 1", n)
	}
	r := e.doRaw(e.request(http.MethodGet, "/raw/"+p.code, nil, "Accept-Encoding", "zstd, gzip"))
	if r.Header.Get("Content-Encoding") != "" || !bytes.Equal(r.body, data) {
		t.Errorf("Content-Encoding %q, body the bytes %v", r.Header.Get("Content-Encoding"), bytes.Equal(r.body, data))
	}
}

// TestRangeRequests: Range on the raw route and the download, of the original bytes whatever the
// client takes, from a blob in Redis and one streamed from S3 and decoded up to the range.
func TestRangeRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, size := range []int{4 << 10, 200 << 10} {
		text := sourceText(size)
		p := e.create(text, "")
		n := len(text)
		identity := e.doRaw(e.request(http.MethodGet, "/raw/"+p.code, nil, "Accept-Encoding", "identity")).Header.Get("ETag")
		zstdTag := e.doRaw(e.request(http.MethodGet, "/raw/"+p.code, nil, "Accept-Encoding", "zstd")).Header.Get("ETag")
		for _, tc := range []struct {
			name   string
			header []string
			status int
			body   string
			cRange string
		}{
			{"suffix", []string{"Range", "bytes=-100"}, 206, text[n-100:], "bytes " + strconv.Itoa(n-100) + "-" + strconv.Itoa(n-1) + "/" + strconv.Itoa(n)},
			{"middle, a zstd client", []string{"Range", "bytes=1000-1999", "Accept-Encoding", "zstd, gzip"}, 206, text[1000:2000], "bytes 1000-1999/" + strconv.Itoa(n)},
			{"first byte", []string{"Range", "bytes=0-0"}, 206, text[:1], "bytes 0-0/" + strconv.Itoa(n)},
			{"past the end, clamped", []string{"Range", "bytes=" + strconv.Itoa(n-5) + "-99999999"}, 206, text[n-5:], "bytes " + strconv.Itoa(n-5) + "-" + strconv.Itoa(n-1) + "/" + strconv.Itoa(n)},
			{"several: the whole", []string{"Range", "bytes=0-1,10-20"}, 200, text, ""},
			{"If-Range matching", []string{"Range", "bytes=0-9", "If-Range", identity}, 206, text[:10], "bytes 0-9/" + strconv.Itoa(n)},
			{"If-Range of the zstd form", []string{"Range", "bytes=0-9", "If-Range", zstdTag}, 200, text, ""},
			{"If-Range of other bytes", []string{"Range", "bytes=0-9", "If-Range", `"0000"`}, 200, text, ""},
			{"unsatisfiable", []string{"Range", "bytes=" + strconv.Itoa(n) + "-"}, 416, "", "bytes */" + strconv.Itoa(n)},
		} {
			for _, path := range []string{"/raw/" + p.code, "/raw/" + p.code + "?download"} {
				r := e.doRaw(e.request(http.MethodGet, path, nil, append([]string{"Accept-Encoding", "identity"}, tc.header...)...))
				if r.StatusCode != tc.status || r.Header.Get("Content-Range") != tc.cRange {
					t.Errorf("%s, %s (%d bytes): %d, Content-Range %q; want %d, %q", tc.name, path, n, r.StatusCode,
						r.Header.Get("Content-Range"), tc.status, tc.cRange)
					continue
				}
				if tc.status == 416 {
					if !strings.Contains(r.text(), "/problems/range-not-satisfiable") {
						t.Errorf("%s: %s", tc.name, r.body)
					}
					continue
				}
				if string(undo(t, r)) != tc.body || r.Header.Get("Content-Encoding") != "" {
					t.Errorf("%s, %s: %d bytes, Content-Encoding %q; want %d bytes of the original", tc.name, path,
						len(r.body), r.Header.Get("Content-Encoding"), len(tc.body))
				}
				if tc.status == 206 && r.Header.Get("ETag") != identity {
					t.Errorf("%s: ETag %s, want the original bytes' %s", tc.name, r.Header.Get("ETag"), identity)
				}
				if strings.HasSuffix(path, "?download") && r.Header.Get("Content-Disposition") == "" {
					t.Errorf("%s: a download's range without Content-Disposition", tc.name)
				}
			}
		}
	}
}

// TestConsumeAnswersInTheClientsCoding: the POST that takes a burn paste sends its bytes in the
// coding the client takes, and never an ETag.
func TestConsumeAnswersInTheClientsCoding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	text := sourceText(8 << 10)
	for _, accept := range []string{"identity", "zstd", "gzip"} {
		p := e.create(text, "?burn=true")
		r := e.doRaw(e.request(http.MethodPost, "/"+p.code, nil, "Accept-Encoding", accept))
		if r.StatusCode != http.StatusOK || string(undo(t, r)) != text {
			t.Fatalf("POST, Accept-Encoding %q: %d, body the text %v", accept, r.StatusCode, string(undo(t, r)) == text)
		}
		want := strings.TrimPrefix(accept, "identity")
		if r.Header.Get("Content-Encoding") != want {
			t.Errorf("POST, Accept-Encoding %q: Content-Encoding %q, want %q", accept, r.Header.Get("Content-Encoding"), want)
		}
		if r.Header.Get("ETag") != "" || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("POST: ETag %q, Cache-Control %q", r.Header.Get("ETag"), r.Header.Get("Cache-Control"))
		}
		if again := e.doRaw(e.request(http.MethodPost, "/"+p.code, nil)); again.StatusCode != http.StatusGone {
			t.Errorf("second POST: %d, want 410", again.StatusCode)
		}
	}
}

// TestGzipFormKeptInCache: the read that fills the cache keeps a compressed paste's gzip form in
// Redis beside its entry, and every replica answers a client that takes gzip but not zstd with
// that form as it is, with no transcode of its own (here none keeps forms in process). A form
// another transcoder version made is not used: the answer is transcoded again. A delete's marker
// drops the form with the entry.
func TestGzipFormKeptInCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, withConfig(func(c *api.Config) { c.DecodedCacheBytes = 0 }))
	text := sourceText(4 << 10)
	p := e.create(text, "")
	if r := e.get("/raw/"+p.code, "Accept-Encoding", "identity"); r.StatusCode != http.StatusOK {
		t.Fatalf("first read: %d", r.StatusCode)
	}
	l := e.cache.Get(ctx, p.code, e.clock.now())
	var kept []byte
	var version string
	storetest.WaitFor(t, "the gzip form made behind the first read", func() bool {
		kept, version = e.cache.GzipForm(ctx, p.code)
		return kept != nil
	})
	if l.Result != cache.Hit || l.Paste.Encoding != "zstd" || kept == nil || version != codec.GzipVersion {
		t.Fatalf("entry after the first read: %v, encoding %q, gzip form of %d bytes of version %q; want a zstd paste with a gzip form",
			l.Result, l.Paste.Encoding, len(kept), version)
	}
	replica := e.replicaWith(e.cache)
	r := replica.doRaw(replica.request(http.MethodGet, "/raw/"+p.code, nil, "Accept-Encoding", "gzip"))
	if r.StatusCode != http.StatusOK || !bytes.Equal(r.body, kept) || string(undo(t, r)) != text {
		t.Fatalf("gzip read on another replica: %d, %d bytes; want the kept gzip form, %d bytes, of the text",
			r.StatusCode, len(r.body), len(kept))
	}
	checkCodingHeaders(t, r, "gzip")

	// An entry whose gzip form says something else shows which form an answer took.
	marker := strings.Repeat("the kept form ", 100)
	for _, tc := range []struct {
		version string
		want    string
	}{{codec.GzipVersion, marker}, {"0", text}} {
		if err := e.cache.Forget(ctx, []string{p.code}); err != nil {
			t.Fatal(err)
		}
		e.cache.Put(ctx, e.cache.Get(ctx, p.code, e.clock.now()), l.Paste, time.Hour, e.clock.now())
		e.cache.PutGzipForm(ctx, l.Paste, tc.version, gzipOf(t, marker), time.Hour, e.clock.now())
		r := replica.doRaw(replica.request(http.MethodGet, "/raw/"+p.code, nil, "Accept-Encoding", "gzip"))
		if got := string(undo(t, r)); r.StatusCode != http.StatusOK || got != tc.want {
			t.Errorf("gzip read of an entry whose form is of version %q: %d, %d bytes, want %d", tc.version, r.StatusCode, len(got), len(tc.want))
		}
	}
	if err := e.cache.MarkGone(ctx, p.code, store.ReasonOwner); err != nil {
		t.Fatal(err)
	}
	if n, err := e.rdb.Exists(ctx, e.cache.Key(p.code)+":gzip").Result(); err != nil || n != 0 {
		t.Errorf("the gzip form after the delete's marker: %d keys, %v; want none", n, err)
	}
	if r := replica.doRaw(replica.request(http.MethodGet, "/raw/"+p.code, nil, "Accept-Encoding", "gzip")); r.StatusCode != http.StatusGone {
		t.Errorf("gzip read after the delete's marker: %d, want 410", r.StatusCode)
	}
}

func gzipOf(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := kgzip.NewWriter(&buf)
	if _, err := z.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
