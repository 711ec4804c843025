package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeShellBlocks returns the README's ```sh blocks.
func readmeShellBlocks(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestREADMEAdminExamples runs the README's admin examples as written, in a folder of their own:
// the lines that draw the admin token, then every example that sends it, against a serve started
// with that token as the README's `make run` line starts it. None may be refused.
func TestREADMEAdminExamples(t *testing.T) {
	t.Parallel()
	var setup string
	var examples []string
	for _, b := range readmeShellBlocks(t) {
		switch {
		case strings.Contains(b, "openssl rand"):
			setup = b
		case strings.Contains(b, `"$admin"`):
			examples = append(examples, b)
		}
	}
	if setup == "" || len(examples) < 2 {
		t.Fatalf("the README's admin examples not found: setup %q, %d examples", setup, len(examples))
	}
	dir := t.TempDir()
	var draw []string
	for _, line := range strings.Split(setup, "\n") {
		if !strings.Contains(line, "make run") {
			draw = append(draw, line)
		}
	}
	bash(t, dir, strings.Join(draw, "\n"))
	token, err := os.ReadFile(filepath.Join(dir, ".pastebin", "admin-token"))
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(token) {
		t.Fatalf("the README's drawn admin token: %q, %v; want 64 hex digits", token, err)
	}
	env := testEnv(t)
	env["PASTEBIN_ADMIN_TOKEN"] = strings.TrimSpace(string(token))
	base, _ := startServe(t, env)
	out := bash(t, dir, strings.ReplaceAll(strings.Join(examples, "\n"), "http://localhost:8080", base))
	for _, refused := range []string{"/problems/unauthorized", "/problems/wrong-admin-token", "/problems/rate-limited", "/problems/bad-request"} {
		if strings.Contains(out, refused) {
			t.Errorf("an example was refused (%s):\n%s", refused, out)
		}
	}
	if !strings.Contains(out, "HTTP/1.1 451") || !strings.Contains(out, `"action":"unblock"`) {
		t.Errorf("the examples did not block, refuse and unblock:\n%s", out)
	}
}

// bash runs script in dir, as a reader would paste it into a shell, and returns its output.
func bash(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\noutput:\n%s", err, script, out)
	}
	return string(out)
}
