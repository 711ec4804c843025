package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"pastebin/api"
	"pastebin/paste"
)

// envName is the environment variable that sets a flag: -database-url is PASTEBIN_DATABASE_URL.
func envName(flagName string) string {
	if flagName == "key" { // put's creator key: PASTEBIN_KEY would not say which key
		return "PASTEBIN_CREATOR_KEY"
	}
	return "PASTEBIN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// newFlagSet returns a flag set whose usage says that each flag has an environment variable.
func newFlagSet(name, summary string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: pastebin %s [flags]\n\n%s\n\nEvery flag can also be set by its environment variable, shown in brackets;\na flag on the command line wins.\n\n", name, summary)
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" {
				def = " (default " + f.DefValue + ")"
			}
			env := envName(f.Name)
			if commandLineOnly(f.Name) {
				env = "command line only"
			}
			fmt.Fprintf(out, "  -%s [%s]\n    \t%s%s\n", f.Name, env, f.Usage, def)
		})
	}
	return fs
}

// commandLineOnly reports whether a flag says what one command does rather than how the service is
// set up: a PASTEBIN_REPAIR left in an environment must not turn every fsck into a repair, nor a
// PASTEBIN_BLOCK every takedown into a block, nor a PASTEBIN_BURN every paste put into a burn.
func commandLineOnly(flagName string) bool {
	switch flagName {
	case "repair", "dry-run", "json", "reason", "legal", "block", "take-down", "code",
		"encrypt", "password", "burn", "max-views", "expires-in", "title":
		return true
	}
	return false
}

// parseFlags applies the environment first and the command line over it.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if commandLineOnly(f.Name) {
			return
		}
		if v := getenv(envName(f.Name)); v != "" && err == nil {
			if setErr := fs.Set(f.Name, v); setErr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, setErr)
			}
		}
	})
	if err != nil {
		return err
	}
	return fs.Parse(args)
}

// byteSize is a flag for a number of bytes: 1048576, 1024KiB, 10MiB, 1GiB.
type byteSize int64

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func (b *byteSize) Set(v string) error {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return fmt.Errorf("not a size such as 10MiB")
	}
	*b = byteSize(n * mult)
	return nil
}

func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// lifetime is a flag for an expiry: 10m, 1h, 1d, 1w, 30d, a number of seconds, or "never" (0).
type lifetime time.Duration

func (l *lifetime) String() string { return paste.FormatLifetime(time.Duration(*l)) }

func (l *lifetime) Set(v string) error {
	d, err := paste.ParseLifetime(v)
	*l = lifetime(d)
	return err
}

// duration is a flag for a duration that also takes days and weeks (1d, 2w).
type duration time.Duration

func (d *duration) String() string { return paste.FormatLifetime(time.Duration(*d)) }

func (d *duration) Set(v string) error {
	l, err := paste.ParseLifetime(v)
	if err == nil && l == 0 {
		err = fmt.Errorf("must be positive")
	}
	*d = duration(l)
	return err
}

// durationOrOff is a flag for a duration that "off" (or 0) turns off: 1h, 1d, 365d.
type durationOrOff time.Duration

func (d *durationOrOff) String() string {
	if *d == 0 {
		return "off"
	}
	return paste.FormatLifetime(time.Duration(*d))
}

func (d *durationOrOff) Set(v string) error {
	if v = strings.ToLower(strings.TrimSpace(v)); v == "off" || v == "0" {
		*d = 0
		return nil
	}
	l, err := paste.ParseLifetime(v)
	if err == nil && l == 0 {
		err = fmt.Errorf(`"never" is not a duration here; "off" turns it off`)
	}
	*d = durationOrOff(l)
	return err
}

// scheduleOrOff is a flag for a schedule, a cron expression or "@every 6h", that "off" turns off.
// An empty variable in the environment is unset, as every other, so it leaves the default; only
// "off" says never there (an empty -flag on the command line says it too).
type scheduleOrOff string

func (s *scheduleOrOff) String() string {
	if *s == "" {
		return "off"
	}
	return string(*s)
}

func (s *scheduleOrOff) Set(v string) error {
	if v = strings.TrimSpace(v); strings.EqualFold(v, "off") {
		v = ""
	}
	*s = scheduleOrOff(v)
	return nil
}

// rate is a flag for a rate limit: 60/1m, 10/1h, or "off" (also 0).
type rate api.Rate

func (r *rate) String() string { return api.Rate(*r).String() }

func (r *rate) Set(v string) error {
	x, err := api.ParseRate(v)
	*r = rate(x)
	return err
}

// uploadRate is a flag for the least a body must deliver: a size and a window, such as 4KiB/5s, or
// "off" (also 0) for no minimum.
type uploadRate api.UploadRate

func (r *uploadRate) String() string {
	if !api.UploadRate(*r).On() {
		return "off"
	}
	return formatBytes(r.Bytes) + "/" + paste.FormatLifetime(r.Window)
}

func (r *uploadRate) Set(v string) error {
	if v = strings.TrimSpace(v); v == "off" || v == "0" {
		*r = uploadRate{}
		return nil
	}
	size, window, ok := strings.Cut(v, "/")
	var b byteSize
	var d duration
	if !ok || b.Set(strings.TrimSpace(size)) != nil || b == 0 || d.Set(strings.TrimSpace(window)) != nil {
		return errors.New(`not a rate such as 4KiB/5s, or "off"`)
	}
	*r = uploadRate{Bytes: int64(b), Window: time.Duration(d)}
	return nil
}

// prefixList is a flag for a comma-separated list of CIDR ranges; a bare address is its own range.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (l *prefixList) Set(v string) error {
	*l = nil
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return fmt.Errorf("%q is not a CIDR range such as 10.0.0.0/8 or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		*l = append(*l, p.Masked())
	}
	return nil
}

// headerName is a flag for the name of an HTTP header that holds one client address, or
// X-Forwarded-For.
type headerName string

func (h *headerName) String() string { return string(*h) }

func (h *headerName) Set(v string) error {
	v = http.CanonicalHeaderKey(strings.TrimSpace(v))
	switch {
	case v == "" || strings.ContainsFunc(v, notTokenRune):
		return fmt.Errorf("%q is not a header name such as X-Real-IP", v)
	case v == "Forwarded":
		return errors.New("Forwarded (RFC 7239) is not read: name X-Forwarded-For, or a header of one address such as X-Real-IP")
	}
	*h = headerName(v)
	return nil
}

// notTokenRune reports whether r may not be in a header name (RFC 9110, section 5.6.2).
func notTokenRune(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}
