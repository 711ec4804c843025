package main

import (
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// twoCommands are the commands of the README's first block. It is the one block of the README that
// TestDocExamples does not run: `make test` would run the test suite inside itself, and `make run`
// is what the examples run against.
var twoCommands = []string{"make run", "make test"}

// The fences of shell examples: "```sh" runs; "```sh norun" cannot run on one machine (its text
// says why); "```sh server" starts the service and serves until Ctrl+C.
const (
	blockRun    = ""
	blockNoRun  = "norun"
	blockServer = "server"
)

// docExample is one ```sh block of a document.
type docExample struct {
	file string // the document, from the project's root
	line int    // the line of its opening fence
	kind string // blockRun, blockNoRun or blockServer
	text string
}

func (b docExample) String() string { return b.file + ":" + strconv.Itoa(b.line) }

// TestDocExamples runs every shell example of the README and of docs/*.md as written, in bash, the
// way their text says: the server block (a `make run` with an admin token) in the background, in
// a copy of the project, on the test services; then each document's blocks in order, in one shell
// per document, as a reader pastes them into another terminal. Every block must exit 0, and a line
// whose comment begins with an HTTP status must print that status (docexamples_check_test.go).
// The examples name http://localhost:8080: make run serves there when 127.0.0.1:8080 is free;
// otherwise it serves on another port, and the test alone rewrites that URL in the examples.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	docs := docExamples(t)
	server := serverExample(t, docs)
	project := projectCopy(t)
	env := testEnv(t)
	run, base := startExampleServer(t, project, server, env)
	token, err := os.ReadFile(filepath.Join(project, ".pastebin", "admin-token"))
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(token) {
		t.Fatalf("%s drew the admin token %q (%v); want 64 hex digits", server, token, err)
	}
	delete(env, "PASTEBIN_ADDR") // the examples' commands listen nowhere
	for _, file := range slices.Sorted(maps.Keys(docs)) {
		blocks := slices.DeleteFunc(docs[file], func(b docExample) bool { return b.kind != blockRun })
		if len(blocks) == 0 {
			continue
		}
		t.Run(file, func(t *testing.T) {
			t.Logf("%d blocks against %s", len(blocks), base)
			runExamples(t, project, runEnv(t, env), base, blocks)
		})
	}
	run.stop()
}

// docExamples returns the ```sh blocks of README.md and docs/*.md by document, the README's block of
// the two commands left out, and checks the fences: the README's blocks all run, and a fence names
// no kind the test does not know.
func docExamples(t *testing.T) map[string][]docExample {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]docExample{}
	for _, path := range append([]string{"../../README.md"}, files...) {
		file := strings.TrimPrefix(path, "../../")
		for _, b := range shellBlocks(t, path, file) {
			if !slices.Contains([]string{blockRun, blockNoRun, blockServer}, b.kind) {
				t.Errorf("%s: a sh block of kind %q; want sh, sh norun or sh server", b, b.kind)
			}
			docs[file] = append(docs[file], b)
		}
	}
	readme := docs["README.md"]
	i := slices.IndexFunc(readme, func(b docExample) bool { return slices.Equal(commands(b.text), twoCommands) })
	if i < 0 {
		t.Fatalf("the README has no block of exactly the two commands %q", twoCommands)
	}
	docs["README.md"] = slices.Delete(readme, i, i+1)
	for _, b := range docs["README.md"] {
		if b.kind != blockRun {
			t.Errorf("%s: the README's examples all run; this one is %q", b, b.kind)
		}
	}
	return docs
}

// shellBlocks returns the ```sh blocks of one document.
func shellBlocks(t *testing.T, path, file string) []docExample {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docExample
	var open *docExample
	for i, line := range strings.Split(string(text), "\n") {
		switch {
		case open == nil && (line == "```sh" || strings.HasPrefix(line, "```sh ")):
			open = &docExample{file: file, line: i + 1, kind: strings.TrimSpace(strings.TrimPrefix(line, "```sh"))}
		case open != nil && line == "```":
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.text += line + "\n"
		}
	}
	if open != nil {
		t.Errorf("%s: a sh block that never closes", *open)
	}
	return blocks
}

// commands are a block's lines without their comments, empty ones left out.
func commands(block string) []string {
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		if cmd, _ := splitComment(line); cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}

// serverExample is the one block across the documents that starts the service.
func serverExample(t *testing.T, docs map[string][]docExample) docExample {
	t.Helper()
	var servers []docExample
	for _, blocks := range docs {
		for _, b := range blocks {
			if b.kind == blockServer {
				servers = append(servers, b)
			}
		}
	}
	if len(servers) != 1 {
		t.Fatalf("%d sh server blocks (%v); want one, that draws the admin token and runs make run with it", len(servers), servers)
	}
	return servers[0]
}

// projectCopy is a folder that is the project to the examples: the repository's folders linked, its
// files at the top copied (go:embed refuses a linked file), without its .pastebin, bin and artifacts.
// The examples write their admin token, their downloads and make run's binary there.
func projectCopy(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		src, dst := filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())
		switch {
		case slices.Contains([]string{".git", ".pastebin", "bin", "artifacts"}, e.Name()):
		case e.IsDir():
			err = os.Symlink(src, dst)
		case e.Type().IsRegular():
			var data []byte
			if data, err = os.ReadFile(src); err == nil {
				err = os.WriteFile(dst, data, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startExampleServer runs the server block as written, in the background, in project, with env's
// services configured (so make run starts none of its own), and answers the URL it serves on: on
// http://localhost:8080, make run's own address, when 127.0.0.1:8080 is free, else on a port of
// its own, which the examples are then rewritten to.
func startExampleServer(t *testing.T, project string, server docExample, env map[string]string) (*makeRun, string) {
	t.Helper()
	const home = "http://localhost:8080"
	start := func(env map[string]string) (*makeRun, error) {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", server.text)
		cmd.Dir = project
		cmd.Env = runEnv(t, env)
		return launchMakeRun(t, cmd)
	}
	if free("127.0.0.1:8080") && free("[::1]:8080") {
		own := maps.Clone(env)
		delete(own, "PASTEBIN_ADDR")
		run, err := start(own)
		if err == nil && run.base == "http://127.0.0.1:8080" {
			return run, home
		}
		if err != nil && !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("%s: %v", server, err)
		}
		t.Logf("127.0.0.1:8080 was taken meanwhile: the examples go to another port")
	}
	run, err := start(env) // env's PASTEBIN_ADDR: a free port of loopback
	if err != nil {
		t.Fatalf("%s: %v", server, err)
	}
	return run, run.base
}

// free says whether nothing listens on addr.
func free(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}
