package representation

import (
	"net/http"
	"strconv"
	"strings"

	"pastebin/blob/codec"
)

// Content codings an answer is sent in, as Content-Encoding names them; identity sends none.
const (
	codingIdentity = "identity"
	codingZstd     = "zstd"
	codingGzip     = "gzip"
)

// chooseCoding picks the content coding of an answer from the request's Accept-Encoding (RFC
// 9110, section 12.5.3): the highest quality among the codings offered, zstd before gzip before
// identity on ties, since zstd is the stored blob as it is and gzip costs a transcode. Without the
// header, or with nothing acceptable, the answer is identity: every client reads that.
func chooseCoding(h http.Header, c Content) string {
	values := h.Values("Accept-Encoding")
	if len(values) == 0 || c.Encoding != codec.Zstd {
		return codingIdentity
	}
	q := acceptedCodings(values)
	best, bestQ := codingIdentity, q.of(codingIdentity)
	for _, coding := range []string{codingGzip, codingZstd} { // later wins ties
		if coding == codingGzip && c.Size <= codec.MinGzipSize {
			continue
		}
		if cq := q.of(coding); cq > 0 && cq >= bestQ {
			best, bestQ = coding, cq
		}
	}
	return best
}

// codingQualities are the qualities an Accept-Encoding gives the codings this server sends, and
// "*" (any other); a coding not named has none. A struct, not a map: it is read on every read.
type codingQualities struct{ identity, gzip, zstd, star namedQuality }

// namedQuality is a coding's quality, if the header named it.
type namedQuality struct {
	q     float64
	named bool
}

func (n *namedQuality) add(q float64) {
	if !n.named || q > n.q {
		n.q, n.named = q, true
	}
}

func acceptedCodings(values []string) codingQualities {
	var q codingQualities
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.Trim(name, " \t")
			switch {
			case strings.EqualFold(name, codingGzip), strings.EqualFold(name, "x-gzip"): // RFC 9110, section 8.4.1.3: the same coding
				q.gzip.add(quality(params))
			case strings.EqualFold(name, codingZstd):
				q.zstd.add(quality(params))
			case strings.EqualFold(name, codingIdentity):
				q.identity.add(quality(params))
			case name == "*":
				q.star.add(quality(params))
			}
		}
	}
	return q
}

// of is coding's quality: its own entry, else "*"'s, else 0; identity is acceptable unless
// excluded by name or by "*" (RFC 9110, section 12.5.3).
func (q codingQualities) of(coding string) float64 {
	var own namedQuality
	switch coding {
	case codingIdentity:
		own = q.identity
	case codingGzip:
		own = q.gzip
	case codingZstd:
		own = q.zstd
	}
	switch {
	case own.named:
		return own.q
	case q.star.named:
		return q.star.q
	case coding == codingIdentity:
		return 1
	}
	return 0
}

// quality reads ";q=0.5" from a coding's parameters: 1 when absent, 0 when malformed.
func quality(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		name, value, ok := strings.Cut(strings.Trim(p, " \t"), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || f < 0 || f > 1 {
			return 0
		}
		return f
	}
	return 1
}
