package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEConfiguration keeps the README's configuration table and serve's flags the same: every
// flag is in the table under its environment variable, with its real default, and the table names
// nothing else.
func TestREADMEConfiguration(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(PASTEBIN_[A-Z0-9_]+)` \\| ([^|]+) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		documented[m[1]] = strings.TrimSpace(m[2])
	}
	var c serveConfig
	fs := c.flags(io.Discard)
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		got, ok := documented[env]
		if !ok {
			t.Errorf("README's configuration table lacks %s (-%s)", env, f.Name)
			return
		}
		want := "`" + f.DefValue + "`"
		if f.DefValue == "" {
			want = "(empty)"
		}
		if got != want {
			t.Errorf("README says %s defaults to %q, the flag says %q", env, got, want)
		}
		delete(documented, env)
	})
	for env := range documented {
		t.Errorf("README documents %s, which serve does not read", env)
	}
}
