package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLink(t *testing.T) {
	for in, want := range map[string]pasteLink{
		"http://localhost:8080/AbCdEfGhIjK":            {base: "http://localhost:8080", code: "AbCdEfGhIjK"},
		"https://p.example/raw/AbCdEfGhIjK#k3y":        {base: "https://p.example", code: "AbCdEfGhIjK", key: "k3y"},
		"https://p.example/paste/AbCdEfGhIjK/#k":       {base: "https://p.example/paste", code: "AbCdEfGhIjK", key: "k"},
		"https://p.example/paste/raw/AbCdEfGhIjK?x=1#": {base: "https://p.example/paste", code: "AbCdEfGhIjK"},
	} {
		got, err := parseLink(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(pasteLink{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", in, diff)
		}
	}
	for _, bad := range []string{"", "AbCdEfGhIjK", "ftp://h/AbCdEfGhIjK", "http:///AbCdEfGhIjK", "http://h/", "http://h"} {
		if l, err := parseLink(bad); err == nil {
			t.Errorf("parseLink(%q) = %+v, want an error", bad, l)
		}
	}
}

// TestPutReadsOnlyServerAndKeyFromTheEnvironment: PASTEBIN_SERVER and PASTEBIN_CREATOR_KEY are
// honoured, and an environment that names every other flag of put changes nothing: a stray
// variable must never burn, limit, encrypt or retitle every paste. The server here only records
// what put sent.
func TestPutReadsOnlyServerAndKeyFromTheEnvironment(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"url": "http://x/AbCdEfGhIjK", "delete_token": "tok"}`)
	}))
	defer srv.Close()
	env := map[string]string{
		"PASTEBIN_SERVER": srv.URL, "PASTEBIN_CREATOR_KEY": "creator", "PASTEBIN_BURN": "true",
		"PASTEBIN_ENCRYPT": "true", "PASTEBIN_PASSWORD": "pw", "PASTEBIN_MAX_VIEWS": "5",
		"PASTEBIN_EXPIRES_IN": "1h", "PASTEBIN_TITLE": "stray",
	}
	var out, errOut bytes.Buffer
	cio := clientIO{in: strings.NewReader("hello"), out: &out, err: &errOut}
	if err := runPut(context.Background(), []string{"-"}, func(k string) string { return env[k] }, cio); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("put sent nothing to PASTEBIN_SERVER")
	}
	if q := got.URL.RawQuery; q != "" {
		t.Errorf("options from the environment: %q, want none", q)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer creator" {
		t.Errorf("Authorization %q, want the creator key", a)
	}
	if out.String() != "http://x/AbCdEfGhIjK\n" || errOut.String() != "tok\n" {
		t.Errorf("stdout %q, stderr %q: want the URL, and the token apart", out.String(), errOut.String())
	}
}

func TestPutRefusesContradictions(t *testing.T) {
	for _, args := range [][]string{
		{"-burn", "-max-views", "3", "-"},
		{"-password", "pw", "-"},
		{"-"},
		{},
		{"a", "b"},
	} {
		cio := clientIO{in: strings.NewReader("x"), out: io.Discard, err: io.Discard}
		env := func(k string) string {
			if k == "PASTEBIN_SERVER" {
				return "http://127.0.0.1:1" // nothing listens: only a refusal before sending passes quickly
			}
			return ""
		}
		if err := runPut(context.Background(), args, env, cio); err == nil {
			t.Errorf("put %q succeeded", args)
		}
	}
}

// client runs put, get and delete against a real server, as a person at a terminal would: each
// call returns what went to stdout and stderr. passwords, if any, are what the terminal answers
// when asked for one, in turn.
type client struct {
	t         *testing.T
	base      string
	passwords []string
}

func (c *client) run(args ...string) (string, string, error) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	cio := clientIO{in: strings.NewReader(""), out: &out, err: &errOut}
	if c.passwords != nil {
		cio.password = func(string) (string, error) {
			if len(c.passwords) == 0 {
				return "", io.EOF
			}
			pw := c.passwords[0]
			c.passwords = c.passwords[1:]
			return pw, nil
		}
	}
	getenv := func(k string) string {
		if k == "PASTEBIN_SERVER" {
			return c.base
		}
		return ""
	}
	cmds := map[string]func(context.Context, []string, func(string) string, clientIO) error{
		"put": runPut, "get": runGet, "delete": runDelete,
	}
	err := cmds[args[0]](context.Background(), args[1:], getenv, cio)
	return out.String(), errOut.String(), err
}

// put creates a paste of text from a file and returns its URL and delete token.
func (c *client) put(text string, flags ...string) (string, string) {
	c.t.Helper()
	file := filepath.Join(c.t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		c.t.Fatal(err)
	}
	out, errOut, err := c.run(append(append([]string{"put"}, flags...), file)...)
	if err != nil {
		c.t.Fatalf("put %v: %v", flags, err)
	}
	return strings.TrimSpace(out), strings.TrimSpace(errOut)
}

// TestClientCommands: put, get and delete against pastebin serve: a plain paste named after its
// file; burn and view limits read with the POST they need, each read one view; an encrypted paste
// whose URL carries its key and whose text only get can read, with its password.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	base, _ := startServe(t, testEnv(t))
	c := &client{t: t, base: base}

	url, token := c.put("plain\n", "-title", "Plain", "-expires-in", "1h")
	if out, _, err := c.run("get", url); err != nil || out != "plain\n" {
		t.Errorf("get: %q, %v", out, err)
	}
	if got := httpGet(t, strings.Replace(url, base, base+"/api/v1/pastes", 1)).body; !strings.Contains(got, `"filename":"notes.txt"`) ||
		!strings.Contains(got, `"title":"Plain"`) {
		t.Errorf("metadata %s: want the file's name and the title", got)
	}
	if _, _, err := c.run("delete", url, token); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, _, err := c.run("delete", url, token); err != nil {
		t.Errorf("a retried delete: %v", err)
	}
	if _, _, err := c.run("get", url); err == nil || !strings.Contains(err.Error(), "410") {
		t.Errorf("get after the delete: %v, want 410", err)
	}

	for _, flags := range [][]string{{"-burn"}, {"-max-views", "2"}} {
		url, _ := c.put("limited\n", flags...)
		views := 1
		if flags[0] == "-max-views" {
			views = 2
		}
		for range views {
			if out, _, err := c.run("get", url); err != nil || out != "limited\n" {
				t.Errorf("%v: get %q, %v", flags, out, err)
			}
		}
		if _, _, err := c.run("get", url); err == nil {
			t.Errorf("%v: a read past the last view succeeded", flags)
		}
	}
}

// TestClientEncryption: put -encrypt sends only ciphertext and prints the link with its key;
// get decrypts with the key and the password; everything that could fail before a view is taken
// (no key, no password) fails before it; a wrong password typed at a terminal is asked for again,
// from the ciphertext already read.
func TestClientEncryption(t *testing.T) {
	t.Parallel()
	base, _ := startServe(t, testEnv(t))
	c := &client{t: t, base: base}

	link, _ := c.put("secret text\n", "-encrypt", "-title", "Secret title")
	if !regexp.MustCompile(`/[0-9A-Za-z]{11}#[A-Za-z0-9_-]{43}$`).MatchString(link) {
		t.Fatalf("put -encrypt printed %q, want the link with its key after #", link)
	}
	noKey, _, _ := strings.Cut(link, "#")
	meta := httpGet(t, strings.Replace(noKey, base, base+"/api/v1/pastes", 1)).body
	if strings.Contains(meta, "Secret title") || strings.Contains(meta, "notes.txt") || !strings.Contains(meta, `"encryption":"v1; kdf=none"`) {
		t.Errorf("the server's metadata %s: want the format, and no title or file name", meta)
	}
	if raw := httpGet(t, strings.Replace(noKey, base, base+"/raw", 1)).body; strings.Contains(raw, "secret text") {
		t.Error("the server holds the text in clear")
	}
	if out, _, err := c.run("get", link); err != nil || out != "secret text\n" {
		t.Errorf("get: %q, %v", out, err)
	}
	if _, _, err := c.run("get", noKey); err == nil || !strings.Contains(err.Error(), "#key") {
		t.Errorf("get without the key: %v", err)
	}

	link, _ = c.put("burn with a password\n", "-encrypt", "-password", "pw", "-burn")
	if _, _, err := c.run("get", link); !errors.Is(err, errNoPassword) {
		t.Errorf("get of a paste with a password, none given, no terminal: %v", err)
	}
	if _, _, err := c.run("get", "-password", "nope", link); err == nil || !strings.Contains(err.Error(), "wrong key or password") {
		t.Errorf("a wrong password: %v", err) // this read took the paste's one view
	}
	link, _ = c.put("burn with a password\n", "-encrypt", "-password", "pw", "-burn")
	c.passwords = []string{"wrong", "pw"}
	out, errOut, err := c.run("get", link)
	if err != nil || out != "burn with a password\n" || !strings.Contains(errOut, "Wrong key or password") {
		t.Errorf("at a terminal, wrong then right: %q, %q, %v", out, errOut, err)
	}
}
