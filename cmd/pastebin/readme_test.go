package main

import (
	"flag"
	"go/version"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestConfigurationTable keeps docs/configuration.md's table and serve's flags the same: every flag
// is in the table under its environment variable, with its real default, and the table names nothing
// else. The README's short table of the most used settings may leave settings out, but what it names
// must exist, with the same default.
func TestConfigurationTable(t *testing.T) {
	t.Parallel()
	defaults := serveDefaults()
	full := configurationTable(t, "../../docs/configuration.md")
	for env, want := range defaults {
		got, ok := full[env]
		switch {
		case !ok:
			t.Errorf("docs/configuration.md lacks %s", env)
		case got != want:
			t.Errorf("docs/configuration.md says %s defaults to %s, the flag says %s", env, got, want)
		}
	}
	for env := range full {
		if _, ok := defaults[env]; !ok {
			t.Errorf("docs/configuration.md documents %s, which serve does not read", env)
		}
	}
	short := configurationTable(t, "../../README.md")
	if len(short) < 8 {
		t.Errorf("the README's table names %d settings; want the most used ones, about ten", len(short))
	}
	for env, got := range short {
		if want, ok := defaults[env]; !ok {
			t.Errorf("the README documents %s, which serve does not read", env)
		} else if got != want {
			t.Errorf("the README says %s defaults to %s, the flag says %s", env, got, want)
		}
	}
}

// serveDefaults maps each of serve's settings, by environment variable, to its default as the tables
// write it: in backquotes, or "(empty)".
func serveDefaults() map[string]string {
	defaults := map[string]string{}
	var c serveConfig
	c.flags(io.Discard).VisitAll(func(f *flag.Flag) {
		defaults[envName(f.Name)] = "`" + f.DefValue + "`"
		if f.DefValue == "" {
			defaults[envName(f.Name)] = "(empty)"
		}
	})
	return defaults
}

// configurationTable reads the rows of a configuration table, `| `PASTEBIN_X` | default | meaning |`.
func configurationTable(t *testing.T, path string) map[string]string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(PASTEBIN_[A-Z0-9_]+)` \\| ([^|]+) \\|")
	table := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(text), -1) {
		if _, twice := table[m[1]]; twice {
			t.Errorf("%s documents %s twice", path, m[1])
		}
		table[m[1]] = strings.TrimSpace(m[2])
	}
	return table
}

// TestMakeRunListensOnLoopback: `make run` is a development run, on 127.0.0.1 unless PASTEBIN_ADDR
// says otherwise; serve's own default (every interface) is for deployments.
func TestMakeRunListensOnLoopback(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ env, want string }{
		{"", "PASTEBIN_ADDR='127.0.0.1:8080' "},
		{"PASTEBIN_ADDR=:9090", "PASTEBIN_ADDR=':9090' "},
	} {
		cmd := exec.Command("make", "-n", "run")
		cmd.Dir = "../.."
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PASTEBIN_ADDR=") })
		if tt.env != "" {
			cmd.Env = append(cmd.Env, tt.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n run: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), tt.want+"scripts/with-services.sh run") {
			t.Errorf("with %q, make run would run:\n%s\nwant %s", tt.env, out, tt.want)
		}
	}
}

// TestGoVersion: go.mod asks for the Go its dependencies need, no newer, and the README says the same.
func TestGoVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.GoVersion}} {{.Main}}{{end}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var own, need string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) != 3:
		case f[2] == "true":
			own = f[1]
		case version.Compare("go"+f[1], "go"+need) > 0:
			need = f[1]
		}
	}
	if own != need {
		t.Errorf("go.mod says go %s; the dependencies need %s", own, need)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "Go "+own+" or newer") {
		t.Errorf("README does not say Go %s or newer", own)
	}
}
