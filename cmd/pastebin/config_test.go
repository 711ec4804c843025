package main

import (
	"io"
	"testing"
)

// Settings come from the environment; what one command should do comes only from its command line.
func TestActionFlagsIgnoreTheEnvironment(t *testing.T) {
	env := map[string]string{"PASTEBIN_REPAIR": "true", "PASTEBIN_JSON": "true", "PASTEBIN_DRY_RUN": "true",
		"PASTEBIN_ORPHAN_GRACE": "2h"}
	fs := newFlagSet("test", "", io.Discard)
	repair, asJSON, dryRun := fs.Bool("repair", false, ""), fs.Bool("json", false, ""), fs.Bool("dry-run", false, "")
	var exp expiryConfig
	exp.registerOrphanGrace(fs)
	if err := parseFlags(fs, []string{"-json"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *repair || *dryRun {
		t.Errorf("repair %v, dry-run %v from the environment; want both false", *repair, *dryRun)
	}
	if !*asJSON {
		t.Error("-json on the command line was not applied")
	}
	if got := exp.orphanGrace.String(); got != "2h" {
		t.Errorf("orphan grace %s, want 2h from the environment", got)
	}
}

// The client address header is one header name; Forwarded (RFC 7239), which names clients in a
// syntax of its own, is refused rather than never finding a client in it.
func TestClientIPHeaderFlag(t *testing.T) {
	for in, want := range map[string]string{"X-Real-IP": "X-Real-Ip", " x-forwarded-for ": "X-Forwarded-For", "CF-Connecting-IP": "Cf-Connecting-Ip"} {
		var h headerName
		if err := h.Set(in); err != nil || string(h) != want {
			t.Errorf("Set(%q): %q, %v; want %q", in, h, err, want)
		}
	}
	for _, in := range []string{"", "X Real IP", "X-Real-IP:", "Forwarded", "forwarded"} {
		var h headerName
		if err := h.Set(in); err == nil {
			t.Errorf("Set(%q) = %q, want an error", in, h)
		}
	}
}

func TestUploadRateFlag(t *testing.T) {
	for in, want := range map[string]string{"4KiB/5s": "4KiB/5s", "1024/1m": "1KiB/1m", "100 / 10s": "100/10s", "off": "off", "0": "off"} {
		var r uploadRate
		if err := r.Set(in); err != nil || r.String() != want {
			t.Errorf("Set(%q): %q, %v; want %q", in, r.String(), err, want)
		}
	}
	for _, in := range []string{"", "4KiB", "x/5s", "0/5s", "4KiB/never", "4KiB/0", "-1/5s"} {
		var r uploadRate
		if err := r.Set(in); err == nil {
			t.Errorf("Set(%q) = %q, want an error", in, r.String())
		}
	}
}
