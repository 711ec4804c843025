package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
