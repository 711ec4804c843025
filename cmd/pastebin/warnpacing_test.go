package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestWarnPacing: settings whose meaning changed when the drain's rates became the deployment's
// are warned about at start-up where they are set, and only there: three replicas that each set
// 2000 now drain at 2000 together, and the pacing target is no longer read.
func TestWarnPacing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{env: nil},
		{env: map[string]string{"PASTEBIN_CLEANUP_MAX_RATE": "2000"}, want: []string{"PASTEBIN_CLEANUP_MAX_RATE"}},
		{env: map[string]string{"PASTEBIN_CLEANUP_MIN_RATE": "500"}, want: []string{"PASTEBIN_CLEANUP_MIN_RATE"}},
		{env: map[string]string{"PASTEBIN_CLEANUP_PACING_TARGET": "100ms"}, want: []string{"PASTEBIN_CLEANUP_PACING_TARGET"}},
		{env: map[string]string{"PASTEBIN_CLEANUP_MAX_RATE": "3000", "PASTEBIN_CLEANUP_PACING_TARGET": "50ms"},
			want: []string{"PASTEBIN_CLEANUP_MAX_RATE", "PASTEBIN_CLEANUP_PACING_TARGET"}},
	} {
		var c expiryConfig
		fs := newFlagSet("serve", "", io.Discard)
		c.register(fs)
		if err := parseFlags(fs, nil, func(k string) string { return tc.env[k] }); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		c.warnPacing(slog.New(slog.NewTextHandler(&logs, nil)))
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if line == "" {
				continue
			}
			if !strings.Contains(line, "level=WARN") {
				t.Errorf("%v: %q is not a warning", tc.env, line)
			}
			got = append(got, strings.Fields(strings.SplitN(line, `msg="`, 2)[1])[0])
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("with %v the start-up warned about %q, want %q:\n%s", tc.env, got, tc.want, logs.String())
		}
	}
}
