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
