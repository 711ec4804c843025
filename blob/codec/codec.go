// Package codec is how paste content is stored in S3: compressed with zstd when that makes it
// smaller, else as it is. It gives the bytes back in the coding a reader takes: the stored zstd
// frame as it is, gzip transcoded on the way, or the original bytes.
package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Encoding is how a blob is stored: the content row's encoding column, where NULL (Identity) is
// the original bytes, as every blob stored before compression existed is.
type Encoding string

// The encodings a blob is stored in.
const (
	Identity Encoding = ""
	Zstd     Encoding = "zstd"
)

// ParseEncoding reads a stored encoding, refusing one this version does not know: serving its
// bytes as if they were the original would show a reader garbage.
func ParseEncoding(s string) (Encoding, error) {
	switch e := Encoding(s); e {
	case Identity, Zstd:
		return e, nil
	}
	return "", fmt.Errorf("stored encoding %q: this version reads only zstd and identity", s)
}

// maxWindow is the largest back-reference a stored frame uses: RFC 9659 caps the zstd content
// coding's window at 8 MiB, and browsers refuse larger ones, so a frame sent as it is must keep to it.
const maxWindow = 8 << 20

// gzipLevel is the level of the gzip a reader that takes no zstd gets, transcoded on every read:
// the fastest, since it is paid per read, and it keeps most of the gain on text.
const gzipLevel = gzip.BestSpeed

// MinGzipSize is what a paste's original bytes must exceed for gzip to be offered: on 1 KiB or
// less a transcode saves under a kilobyte, less than a TCP segment, and costs the server and the
// client work on every read (nginx's gzip_min_length and CDNs skip small bodies too). The stored
// zstd frame costs the server nothing, and is offered whatever the size.
const MinGzipSize = 1024

// GzipVersion names the bytes Gzip makes of given content: the gzip form's ETag carries it, and a
// gzip form kept elsewhere (the cache) is used only when it was made by the same version. Bump it
// when the gzip settings (or a library update) change the bytes the same content transcodes to.
const GzipVersion = "1"

// Codec compresses and decodes blobs. One serves a whole process: its encoder and its whole-blob
// decoder are safe for concurrent use, and its stream decoders and gzip writers are pooled.
type Codec struct {
	enc     *zstd.Encoder
	dec     *zstd.Decoder // DecodeAll only, never past the size the caller gives
	streams sync.Pool     // *zstd.Decoder, one stream at a time, no goroutines of its own
	gzips   sync.Pool     // *gzip.Writer
}

// New returns a Codec. Its options are constants, which the zstd package accepts: an error
// here is a programming error, and panics.
func New() *Codec {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(maxWindow),
		zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(fmt.Sprintf("zstd encoder: %v", err))
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxWindow(maxWindow),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(fmt.Sprintf("zstd decoder: %v", err))
	}
	return &Codec{enc: enc, dec: dec}
}

// newStreamDecoder decodes one stream at a time on the caller's goroutine, holding no more than
// the window: the memory a read of a large blob takes is bounded whatever its size.
func newStreamDecoder() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow),
		zstd.WithDecoderMaxMemory(maxWindow), zstd.WithDecoderLowmem(true))
}

// Compress returns how data is stored: a zstd frame when it is smaller than data, else data
// itself. Content that does not compress (an encrypted paste's) costs one attempt and no more.
func (c *Codec) Compress(data []byte) ([]byte, Encoding) {
	if len(data) == 0 {
		return data, Identity
	}
	// The frame can be no longer than data to be worth it: stop growing the buffer there.
	out := c.enc.EncodeAll(data, make([]byte, 0, len(data)))
	if len(out) >= len(data) {
		return data, Identity
	}
	return out, Zstd
}

// ErrCorrupt says a stored blob does not decode to the size its content row says.
var ErrCorrupt = errors.New("stored blob does not decode to its content")

// Decode returns the original bytes of a whole stored blob of size original bytes.
func (c *Codec) Decode(stored []byte, enc Encoding, size int64) ([]byte, error) {
	if enc == Identity && int64(len(stored)) != size {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrCorrupt, len(stored), size)
	}
	if enc == Identity {
		return stored, nil
	}
	if size < 0 {
		return nil, fmt.Errorf("%w: size %d", ErrCorrupt, size)
	}
	// The capacity bounds the output (WithDecodeAllCapLimit): one byte past size says it is too long.
	data, err := c.dec.DecodeAll(stored, make([]byte, 0, size+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrCorrupt, len(data), size)
	}
	return data, nil
}

// NewReader reads the original bytes, size of them, of the stored blob r, decoding as it goes:
// memory stays bounded by the window, whatever the size. A blob that decodes to more or fewer bytes
// fails with ErrCorrupt. Closing it returns its decoder for the next read; it does not close r.
func (c *Codec) NewReader(r io.Reader, enc Encoding, size int64) (io.ReadCloser, error) {
	if enc == Identity {
		return &sizedReader{r: r, left: size}, nil
	}
	d, _ := c.streams.Get().(*zstd.Decoder)
	if d == nil {
		var err error
		if d, err = newStreamDecoder(); err != nil {
			return nil, fmt.Errorf("zstd decoder: %w", err)
		}
	}
	if err := d.Reset(r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &sizedReader{r: d, left: size, release: func() {
		_ = d.Reset(nil) // drops the reference to the stream
		c.streams.Put(d)
	}}, nil
}

// sizedReader reads exactly left more bytes from r, else fails with ErrCorrupt.
type sizedReader struct {
	r       io.Reader
	left    int64
	release func() // on Close; nil when there is nothing to give back
}

func (s *sizedReader) Read(p []byte) (int, error) {
	if s.r == nil {
		return 0, errors.New("read after close")
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	switch {
	case s.left < 0:
		return n, fmt.Errorf("%w: longer than its size", ErrCorrupt)
	case err == io.EOF && s.left > 0:
		return n, fmt.Errorf("%w: %d bytes short", ErrCorrupt, s.left)
	}
	return n, err // the stream's own failure: S3's, or zstd's on a damaged frame
}

func (s *sizedReader) Close() error {
	if s.release != nil {
		s.release()
		s.release = nil
	}
	s.r = nil
	return nil
}

// Gzip copies the original bytes from src to w as one gzip member, with a pooled writer: a
// transcode on the fly, in memory bounded by the compressor's state, whatever the size.
func (c *Codec) Gzip(w io.Writer, src io.Reader) (int64, error) {
	z, _ := c.gzips.Get().(*gzip.Writer)
	if z == nil {
		var err error
		if z, err = gzip.NewWriterLevel(w, gzipLevel); err != nil {
			return 0, err
		}
	} else {
		z.Reset(w)
	}
	defer c.gzips.Put(z)
	n, err := io.Copy(z, src)
	if err != nil {
		z.Reset(io.Discard) // drop w; what was written is cut short anyway
		return n, err
	}
	return n, z.Close()
}

// GzipBytes is Gzip of data into memory.
func (c *Codec) GzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := c.Gzip(&buf, bytes.NewReader(data)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
