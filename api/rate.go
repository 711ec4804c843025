package api

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"pastebin/paste"
)

// Rate is a rate limit: at most Requests in each Window, per client. The zero Rate is no limit.
type Rate struct {
	Requests int
	Window   time.Duration
}

// On reports whether r limits anything.
func (r Rate) On() bool { return r.Requests > 0 && r.Window > 0 }

// String writes r the way ParseRate reads it: "60/1m", or "off".
func (r Rate) String() string {
	if !r.On() {
		return "off"
	}
	return strconv.Itoa(r.Requests) + "/" + paste.FormatDuration(r.Window)
}

// ParseRate reads a rate limit: a count and a window such as "60/1m", "10/1h" or "1000/1d"
// ("60/m" is 60/1m), or "off" or "0" for none.
func ParseRate(v string) (Rate, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "off" || v == "0" {
		return Rate{}, nil
	}
	count, window, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 {
		return Rate{}, errors.New(`not a rate such as 60/1m, 10/1h, or "off"`)
	}
	if window != "" && (window[0] < '0' || window[0] > '9') {
		window = "1" + window
	}
	d, err := paste.ParseLifetime(window) // "never" reads as 0, which no window is
	// Counters are kept per whole-second window (Retry-After and the Redis keys count seconds).
	if err != nil || d < time.Second || d%time.Second != 0 {
		return Rate{}, errors.New("the window of a rate must be whole seconds, such as 1m or 1h")
	}
	return Rate{Requests: n, Window: d}, nil
}
