package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*$`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// TestDocLinks: every relative link of the README and of the documents under docs/ and deploy/
// reaches a file of the repository, and every #anchor a heading of its document, as GitHub names
// headings' anchors.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	files := []string{"../../README.md", "../../deploy/kubernetes/README.md"}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append(files, docs...) {
		for _, target := range markdownLinks(t, file) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = file
			} else {
				path = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s, which does not exist", file, target)
				continue
			}
			if anchor != "" && !anchors(t, path)[anchor] {
				t.Errorf("%s links %s: %s has no heading whose anchor is #%s", file, target, path, anchor)
			}
		}
	}
}

// markdownLinks are the targets of a document's links and images, outside fenced code.
func markdownLinks(t *testing.T, path string) []string {
	t.Helper()
	var targets []string
	for _, line := range proseLines(t, path) {
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// anchors are the anchors GitHub gives a document's headings: lower case, punctuation dropped,
// blanks made hyphens, and -1, -2 after a repeated one.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	for _, line := range proseLines(t, path) {
		m := mdHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := strings.Map(func(r rune) rune {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				return unicode.ToLower(r)
			case r == ' ':
				return '-'
			}
			return -1
		}, m[1])
		anchor := slug
		for n := 1; found[anchor]; n++ {
			anchor = slug + "-" + strconv.Itoa(n)
		}
		found[anchor] = true
	}
	return found
}

// proseLines are a Markdown file's lines outside fenced code blocks.
func proseLines(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, line)
		}
	}
	return lines
}
