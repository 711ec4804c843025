package site

import (
	"strconv"
	"strings"
)

// Plural writes a count of unit for people: "1 paste", "3 pastes".
func Plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

// HumanBytes writes a size the way people read it: "812 bytes", "14.2 KiB".
func HumanBytes(n int64) string {
	oneDecimal := func(f float64) string { return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") }
	switch {
	case n < 1<<10:
		return Plural(n, "byte")
	case n < 1<<20:
		return oneDecimal(float64(n)/(1<<10)) + " KiB"
	}
	return oneDecimal(float64(n)/(1<<20)) + " MiB"
}
