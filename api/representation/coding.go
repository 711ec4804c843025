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

// minGzipSize is what a paste's original bytes must exceed for gzip to be offered: on 1 KiB or
// less a transcode saves under a kilobyte, less than a TCP segment, and costs the server and the
// client work on every read (nginx's gzip_min_length and CDNs skip small bodies too). The stored
// zstd frame costs the server nothing, and is offered whatever the size.
const minGzipSize = 1024

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
		if coding == codingGzip && c.Size <= minGzipSize {
			continue
		}
		if cq := q.of(coding); cq > 0 && cq >= bestQ {
			best, bestQ = coding, cq
		}
	}
	return best
}

// codingQualities are the qualities an Accept-Encoding gives, by lowercase coding; "*" is any other.
type codingQualities map[string]float64

func acceptedCodings(values []string) codingQualities {
	q := codingQualities{}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.Trim(name, " \t"))
			if name == "x-gzip" { // RFC 9110, section 8.4.1.3: the same coding
				name = codingGzip
			}
			if name != "" {
				q[name] = max(q[name], quality(params))
			}
		}
	}
	return q
}

// of is coding's quality: its own entry, else "*"'s, else 0; identity is acceptable unless
// excluded by name or by "*" (RFC 9110, section 12.5.3).
func (q codingQualities) of(coding string) float64 {
	if v, ok := q[coding]; ok {
		return v
	}
	if v, ok := q["*"]; ok {
		return v
	}
	if coding == codingIdentity {
		return 1
	}
	return 0
}

// quality reads ";q=0.5" from a coding's parameters: 1 when absent, 0 when malformed.
func quality(params string) float64 {
	for _, p := range strings.Split(params, ";") {
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
