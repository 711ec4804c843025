package web

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/chroma/v2/lexers"

	"pastebin/paste"
)

func TestLanguageChoicesHaveLexers(t *testing.T) {
	for _, c := range languageChoices[1:] {
		if lexers.Get(c.Value) == nil {
			t.Errorf("the form offers %q, which chroma does not know", c.Value)
		}
		in := paste.Input{Language: c.Value}
		if err := in.Tidy(); err != nil {
			t.Errorf("the form offers %q, which the API refuses: %v", c.Value, err)
		}
	}
}

func TestGuessLanguage(t *testing.T) {
	tests := map[string]string{
		"package main\n\nfunc main() {}\n":              "Go",
		"def f(x):\n    return x\n":                     "Python",
		"#!/bin/sh\necho hi\n":                          "Bash",
		`{"a": [1, 2]}`:                                 "JSON",
		"SELECT * FROM t WHERE a = 1;\n":                "SQL",
		"<!DOCTYPE html>\n<html><body></body></html>\n": "HTML",
		"#include <stdio.h>\nint main(void) {}\n":       "C",
		"fn main() {\n    println!(\"hi\");\n}\n":       "Rust",
		"diff --git a/x b/x\n--- a/x\n+++ b/x\n":        "Diff",
		"Dear diary,\ntoday I pasted some text.\n":      "Plain text",
		"<script>alert(1)</script>":                     "Plain text",
	}
	for content, want := range tests {
		if got := renderContent([]byte(content), "", "").Language; got != want {
			t.Errorf("%.30q: guessed %s, want %s", content, got, want)
		}
	}
	if got := renderContent([]byte("x = 1\n"), "", "notes.rb").Language; got != "Ruby" {
		t.Errorf("by file name: %s, want Ruby", got)
	}
	if got := renderContent([]byte("package main\n\nfunc main() {}\n"), "python", "x.go").Language; got != "Python" {
		t.Errorf("the language asked for should win: %s", got)
	}
}

// The rendering holds the formatter's own tags and nothing else: with those removed, what is left
// has no markup and unescapes to the paste itself.
func TestRenderContentEscapesEverything(t *testing.T) {
	content := "<script>alert('x')</script>\n<img src=x onerror=alert(1)>&amp; \"q\"\n"
	ownTags := regexp.MustCompile(`<span class="[a-z0-9 ]+">|</span>|<span class="line" id="L\d+">|<a class="ln" href="#L\d+" data-n="\d+" aria-hidden="true" tabindex="-1"></a>`)
	for _, lang := range []string{"", "html", "plaintext", "javascript", "go"} {
		r := renderContent([]byte(content), lang, "")
		text := ownTags.ReplaceAllString(string(r.HTML), "")
		if strings.ContainsAny(text, "<>") || html.UnescapeString(text) != content {
			t.Errorf("language %q: the rendering is not the escaped paste: %s", lang, r.HTML)
		}
		if r.Lines != 2 {
			t.Errorf("language %q: %d lines, want 2", lang, r.Lines)
		}
	}
}

func TestRelativeTime(t *testing.T) {
	now := time.Now()
	tests := map[time.Duration]string{
		24*time.Hour - 2*time.Second: "in 1 day",
		7 * 24 * time.Hour:           "in 7 days",
		90 * time.Minute:             "in 1 hour",
		10 * time.Minute:             "in 10 minutes",
		20 * time.Second:             "in less than a minute",
		-time.Minute:                 "now",
	}
	for d, want := range tests {
		if got := relativeTime(now, now.Add(d)); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

// Every token class the light style colours is coloured again for dark pages, or the light colour
// would show on the dark background; and the stylesheet is the same bytes on every replica.
func TestHighlightCSSDark(t *testing.T) {
	css := string(highlightCSS())
	if css != string(highlightCSS()) {
		t.Fatal("highlightCSS differs between calls: its hashed URL would differ between replicas")
	}
	light, dark, ok := strings.Cut(css, "@media (prefers-color-scheme: dark)")
	if !ok {
		t.Fatal("no dark block in the stylesheet")
	}
	coloured := regexp.MustCompile(`\.chroma \.([a-z0-9]+) \{[^}]*\bcolor:`)
	inDark := map[string]bool{}
	for _, m := range coloured.FindAllStringSubmatch(dark, -1) {
		inDark[m[1]] = true
	}
	for _, m := range coloured.FindAllStringSubmatch(light, -1) {
		if !inDark[m[1]] {
			t.Errorf("class %s is coloured for light pages and not for dark ones", m[1])
		}
	}
}
