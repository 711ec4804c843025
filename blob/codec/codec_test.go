package codec_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"pastebin/blob/codec"
)

func newCodec(t testing.TB) *codec.Codec {
	t.Helper()
	return codec.New()
}

func TestCompressOnlyWhenSmaller(t *testing.T) {
	t.Parallel()
	c := newCodec(t)
	text := []byte(strings.Repeat("func main() { fmt.Println(\"hello, world\") }\n", 200))
	random := make([]byte, 4096)
	_, _ = rand.Read(random) // as an encrypted paste's ciphertext: nothing to gain
	for _, tc := range []struct {
		name string
		data []byte
		want codec.Encoding
	}{
		{"source code", text, codec.Zstd},
		{"random bytes", random, codec.Identity},
		{"one byte", []byte("x"), codec.Identity},
		{"empty", nil, codec.Identity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored, enc := c.Compress(tc.data)
			if enc != tc.want {
				t.Fatalf("encoding %q, want %q", enc, tc.want)
			}
			if enc == codec.Identity && !bytes.Equal(stored, tc.data) {
				t.Fatal("identity blob differs from the data")
			}
			if enc == codec.Zstd && len(stored) >= len(tc.data) {
				t.Fatalf("zstd blob of %d bytes for %d", len(stored), len(tc.data))
			}
			back, err := c.Decode(stored, enc, int64(len(tc.data)))
			if err != nil || !bytes.Equal(back, tc.data) {
				t.Fatalf("Decode: %v, equal %v", err, bytes.Equal(back, tc.data))
			}
		})
	}
}

// A stored frame goes to a client as it is, so any zstd decoder must read it, within RFC 9659's
// 8 MiB window even for content larger than that.
func TestStoredFrameWindow(t *testing.T) {
	t.Parallel()
	c := newCodec(t)
	data := bytes.Repeat([]byte("0123456789abcdef\n"), (9<<20)/17)
	stored, enc := c.Compress(data)
	if enc != codec.Zstd {
		t.Fatalf("encoding %q", enc)
	}
	var h zstd.Header
	if err := h.Decode(stored); err != nil {
		t.Fatal(err)
	}
	if h.WindowSize > 8<<20 {
		t.Errorf("window %d bytes, want at most 8 MiB", h.WindowSize)
	}
	d, err := zstd.NewReader(bytes.NewReader(stored), zstd.WithDecoderMaxWindow(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := io.ReadAll(d)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("a decoder bound to 8 MiB: %v, equal %v", err, bytes.Equal(got, data))
	}
}

func TestNewReaderRoundTrip(t *testing.T) {
	t.Parallel()
	c := newCodec(t)
	data := []byte(strings.Repeat("the quick brown fox\n", 5000))
	stored, enc := c.Compress(data)
	// Many reads at once, each with a pooled decoder: none sees another's stream.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				r, err := c.NewReader(bytes.NewReader(stored), enc, int64(len(data)))
				if err != nil {
					t.Error(err)
					return
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("read back: %v, equal %v", err, bytes.Equal(got, data))
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestWrongSizeIsCorrupt(t *testing.T) {
	t.Parallel()
	c := newCodec(t)
	data := []byte(strings.Repeat("abc", 1000))
	stored, enc := c.Compress(data)
	for _, size := range []int64{int64(len(data)) - 1, int64(len(data)) + 1} {
		if _, err := c.Decode(stored, enc, size); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("Decode with size %d: %v, want ErrCorrupt", size, err)
		}
		for _, e := range []codec.Encoding{enc, codec.Identity} {
			blob := stored
			if e == codec.Identity {
				blob = data
			}
			r, err := c.NewReader(bytes.NewReader(blob), e, size)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(r); !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("%q reader with size %d: %v, want ErrCorrupt", e, size, err)
			}
			r.Close()
		}
	}
}

func TestGzipTranscode(t *testing.T) {
	t.Parallel()
	c := newCodec(t)
	data := []byte(strings.Repeat("package main\n\nimport \"fmt\"\n", 3000))
	for range 3 { // pooled writers come back clean
		gz, err := c.GzipBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(gz) >= len(data)/2 {
			t.Errorf("gzip of %d bytes for %d of repeated text", len(gz), len(data))
		}
		zr, err := kgzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("gunzip: %v, equal %v", err, bytes.Equal(got, data))
		}
	}
}

// The gzip form's ETag names it by the content alone, so the same content must transcode to the
// same bytes every time.
func TestGzipIsDeterministic(t *testing.T) {
	t.Parallel()
	c := newCodec(t)
	data := []byte(strings.Repeat("deterministic\n", 999))
	first, err := c.GzipBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := c.GzipBytes(data)
		if err != nil || !bytes.Equal(again, first) {
			t.Fatalf("a second transcode differs: %v", err)
		}
	}
}

func TestParseEncoding(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]codec.Encoding{"": codec.Identity, "zstd": codec.Zstd} {
		if got, err := codec.ParseEncoding(in); err != nil || got != want {
			t.Errorf("ParseEncoding(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := codec.ParseEncoding("br"); err == nil {
		t.Error("ParseEncoding(br): no error")
	}
}
