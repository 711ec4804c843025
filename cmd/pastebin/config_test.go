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

// An empty variable is unset, so it leaves the sweeper's default schedule; "off" turns it off, in
// the environment or on the command line (where an empty value says it too).
func TestSweepScheduleOff(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{env: "", want: "30 3 * * *"},
		{env: "off", want: ""},
		{env: " OFF ", want: ""},
		{env: "@every 6h", want: "@every 6h"},
		{env: "@every 6h", args: []string{"-sweep-schedule=off"}, want: ""},
		{env: "@every 6h", args: []string{"-sweep-schedule="}, want: ""},
	} {
		fs := newFlagSet("test", "", io.Discard)
		var exp expiryConfig
		exp.register(fs)
		env := map[string]string{"PASTEBIN_SWEEP_SCHEDULE": c.env}
		if err := parseFlags(fs, c.args, func(k string) string { return env[k] }); err != nil {
			t.Fatal(err)
		}
		if got := string(exp.sweepSchedule); got != c.want {
			t.Errorf("PASTEBIN_SWEEP_SCHEDULE=%q, args %q: schedule %q, want %q", c.env, c.args, got, c.want)
		}
	}
}
