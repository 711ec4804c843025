package paste

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ExpiryPolicy says which lifetimes a creator may ask for. Validate checks it is coherent.
type ExpiryPolicy struct {
	Default    time.Duration // used when the request names none; 0 means never
	Max        time.Duration // longest allowed lifetime
	AllowNever bool          // whether "never" is accepted
}

// expiryUnits are the suffixes accepted after a number, besides Go's own (s, m, h).
var expiryUnits = map[string]time.Duration{
	"s": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour,
	"d": 24 * time.Hour, "w": 7 * 24 * time.Hour,
}

// Lifetime reads an expires_in value: "never", a number of seconds ("3600"), a number with a unit
// ("10m", "1h", "1d", "1w", "30d"), or a Go duration ("1h30m"). An empty value means the policy's
// default. It returns 0 for "never", and an *ExpiryError for what the policy does not allow.
func (p ExpiryPolicy) Lifetime(v string) (time.Duration, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return p.Default, nil
	}
	if v == "never" {
		if !p.AllowNever {
			return 0, &ExpiryError{`"never" is not allowed here; the longest expiry is ` + FormatDuration(p.Max) + "."}
		}
		return 0, nil
	}
	d, ok := parseLifetime(v)
	if !ok {
		return 0, &ExpiryError{`expires_in must be "never", a number of seconds, or a number with a unit (s, m, h, d, w), such as 10m, 1h, 1d, 1w or 30d.`}
	}
	if d < time.Second {
		return 0, &ExpiryError{"expires_in must be at least one second."}
	}
	if p.Max > 0 && d > p.Max {
		return 0, &ExpiryError{"expires_in is longer than the maximum of " + FormatDuration(p.Max) + "."}
	}
	return d, nil
}

// ParseLifetime reads a lifetime the way expires_in and the expiry settings write it: "never" (0), a
// number of seconds, a number with a unit (s, m, h, d, w), or a Go duration.
func ParseLifetime(v string) (time.Duration, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "never" {
		return 0, nil
	}
	d, ok := parseLifetime(v)
	if !ok {
		return 0, errors.New(`not a lifetime such as 10m, 1h, 1d, 1w, 30d, 3600 or "never"`)
	}
	return d, nil
}

// MaxLifetime is the longest lifetime anything reads: far past any sensible expiry, and far from
// time.Duration's overflow at 292 years.
const MaxLifetime = 100 * 365 * 24 * time.Hour

func parseLifetime(v string) (time.Duration, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > int64(MaxLifetime/time.Second) {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i > 0 {
		if unit, ok := expiryUnits[v[i:]]; ok {
			n, err := strconv.ParseInt(v[:i], 10, 64)
			if err != nil || n <= 0 || n > int64(MaxLifetime/unit) {
				return 0, false
			}
			return time.Duration(n) * unit, true
		}
	}
	// Capped like the forms above, or "876001h0m" would be read but written back as "876001h",
	// which they refuse.
	d, err := time.ParseDuration(v)
	return d, err == nil && d > 0 && d <= MaxLifetime
}

// FormatLifetime writes d the way expires_in and the settings read it: the largest whole unit
// (1w, 30d, 10m, 90s), or "never" for 0.
func FormatLifetime(d time.Duration) string {
	if d == 0 {
		return "never"
	}
	return FormatDuration(d)
}

// FormatDuration writes d the way expires_in reads it, in the largest whole unit.
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if d >= u.unit && d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.suffix
		}
	}
	return d.String()
}

// Validate reports a policy that contradicts itself.
func (p ExpiryPolicy) Validate() error {
	switch {
	case p.Default == 0 && !p.AllowNever:
		return errors.New(`the default expiry is "never" but "never" is not allowed`)
	case p.Max < time.Second:
		return errors.New("the maximum expiry must be at least one second")
	case p.Default != 0 && p.Default < time.Second: // a default no request could ask for
		return errors.New(`the default expiry must be at least one second, or "never"`)
	case p.Default > p.Max:
		return errors.New("the default expiry is longer than the maximum")
	}
	return nil
}
