package representation_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pastebin/api/representation"
)

type rng = representation.Range

func TestParseRange(t *testing.T) {
	t.Parallel()
	const size = 100
	for _, tc := range []struct {
		header string
		want   []rng
		err    error
	}{
		{"bytes=0-9", []rng{{0, 10}}, nil},
		{"bytes=90-", []rng{{90, 10}}, nil},
		{"bytes=90-1000", []rng{{90, 10}}, nil}, // clamped to the end
		{"bytes=-10", []rng{{90, 10}}, nil},     // suffix
		{"bytes=-1000", []rng{{0, 100}}, nil},   // a suffix longer than the whole is the whole
		{"bytes=99-99", []rng{{99, 1}}, nil},
		{"BYTES=0-0", []rng{{0, 1}}, nil},
		{"bytes= 0-1 , 5-6", []rng{{0, 2}, {5, 2}}, nil},
		{"bytes=0-1,,", []rng{{0, 2}}, nil},        // empty list elements do not count
		{"bytes=200-300, 0-1", []rng{{0, 2}}, nil}, // the satisfiable ones only
		{"bytes=100-", nil, representation.ErrUnsatisfiable},
		{"bytes=100-200", nil, representation.ErrUnsatisfiable},
		{"bytes=-0", nil, representation.ErrUnsatisfiable}, // RFC 9110: a zero suffix is not satisfiable
		{"bytes=5-4", nil, representation.ErrInvalidRange},
		{"bytes=", nil, representation.ErrInvalidRange},
		{"bytes=,", nil, representation.ErrInvalidRange},
		{"bytes=-", nil, representation.ErrInvalidRange},
		{"bytes=a-b", nil, representation.ErrInvalidRange},
		{"bytes=+1-2", nil, representation.ErrInvalidRange},
		{"bytes=1 -2", nil, representation.ErrInvalidRange},
		{"bytes=0-1-2", nil, representation.ErrInvalidRange},
		{"bytes=99999999999999999999-", nil, representation.ErrInvalidRange},
		{"items=0-1", nil, representation.ErrInvalidRange},
		{"bytes 0-1", nil, representation.ErrInvalidRange},
		{"bytes=0-1, x", nil, representation.ErrInvalidRange}, // one bad spec spoils the set
		{"bytes=" + strings.Repeat("0-0,", 101), nil, representation.ErrInvalidRange},
	} {
		got, err := representation.ParseRange(tc.header, size)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("ParseRange(%q): error %v, want %v", tc.header, err, tc.err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseRange(%q) (-want +got):\n%s", tc.header, diff)
		}
	}
}

// FuzzParseRange checks that every answer is one of three, and that the ranges it returns lie
// within the representation and read back the same when written as a header.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=0-1,3-4", "bytes=9-1", "bytes=,,", "bytes=-0", "x"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, header string, size int64) {
		if size < 0 {
			size = -(size + 1)
		}
		ranges, err := representation.ParseRange(header, size)
		switch {
		case errors.Is(err, representation.ErrInvalidRange), errors.Is(err, representation.ErrUnsatisfiable):
			if ranges != nil {
				t.Fatalf("ranges %v beside %v", ranges, err)
			}
			return
		case err != nil:
			t.Fatalf("unexpected error %v", err)
		case len(ranges) == 0:
			t.Fatal("no range and no error")
		}
		var specs []string
		for _, r := range ranges {
			if r.Start < 0 || r.Length <= 0 || r.Start > size-r.Length {
				t.Fatalf("range %+v outside %d bytes (header %q)", r, size, header)
			}
			specs = append(specs, fmt.Sprintf("%d-%d", r.Start, r.Start+r.Length-1))
		}
		again, err := representation.ParseRange("bytes="+strings.Join(specs, ","), size)
		if err != nil || !cmp.Equal(again, ranges) {
			t.Fatalf("read back %v, %v; want %v", again, err, ranges)
		}
	})
}
