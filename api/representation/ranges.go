package representation

import (
	"errors"
	"strconv"
	"strings"
)

// Range is a satisfiable byte range of a representation: Length bytes from Start.
type Range struct {
	Start, Length int64
}

// contentRange is the Content-Range of r in a representation of size bytes.
func (r Range) contentRange(size int64) string {
	return "bytes " + strconv.FormatInt(r.Start, 10) + "-" + strconv.FormatInt(r.Start+r.Length-1, 10) +
		"/" + strconv.FormatInt(size, 10)
}

var (
	// ErrInvalidRange says a Range header is not a byte range set: RFC 9110 (section 14.2) lets a
	// server ignore it and answer the whole representation, which Serve does.
	ErrInvalidRange = errors.New("invalid byte range")
	// ErrUnsatisfiable says a valid byte range set has no range within the representation: 416.
	ErrUnsatisfiable = errors.New("no range satisfiable")
)

// maxRanges is the most ranges a header may name; past it the header is ignored, a defence against
// a set of many tiny or overlapping ranges (RFC 9110, section 14.2).
const maxRanges = 100

// ParseRange reads a Range header (RFC 9110, section 14.1.2) for a representation of size bytes.
// It returns the satisfiable ranges in the header's order, each clamped to the representation;
// ErrUnsatisfiable when the set is valid but none is; ErrInvalidRange for anything else, another
// unit included.
func ParseRange(header string, size int64) ([]Range, error) {
	unit, set, ok := strings.Cut(header, "=")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return nil, ErrInvalidRange
	}
	specs := strings.Split(set, ",")
	if len(specs) > maxRanges {
		return nil, ErrInvalidRange
	}
	var ranges []Range
	seen := 0
	for _, spec := range specs {
		spec = strings.Trim(spec, " \t")
		if spec == "" {
			continue // RFC 9110's list rule (section 5.6.1): empty elements are not counted
		}
		seen++
		r, satisfiable, err := parseSpec(spec, size)
		if err != nil {
			return nil, err
		}
		if satisfiable {
			ranges = append(ranges, r)
		}
	}
	switch {
	case seen == 0:
		return nil, ErrInvalidRange
	case len(ranges) == 0:
		return nil, ErrUnsatisfiable
	}
	return ranges, nil
}

// parseSpec reads one range-spec: first-last, first-, or -suffix.
func parseSpec(spec string, size int64) (Range, bool, error) {
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return Range{}, false, ErrInvalidRange
	}
	if first == "" { // suffix-range: the last n bytes
		n, err := parseDigits(last)
		if err != nil {
			return Range{}, false, err
		}
		n = min(n, size)
		return Range{Start: size - n, Length: n}, n > 0, nil
	}
	start, err := parseDigits(first)
	if err != nil {
		return Range{}, false, err
	}
	end := size - 1
	if last != "" {
		l, err := parseDigits(last)
		if err != nil || l < start {
			return Range{}, false, ErrInvalidRange
		}
		end = min(l, end)
	}
	if start >= size {
		return Range{}, false, nil
	}
	return Range{Start: start, Length: end - start + 1}, true, nil
}

// parseDigits reads 1*DIGIT, refusing signs, spaces and numbers past int64.
func parseDigits(s string) (int64, error) {
	if s == "" {
		return 0, ErrInvalidRange
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, ErrInvalidRange
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, ErrInvalidRange
	}
	return n, nil
}
