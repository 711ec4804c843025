package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHasteClientsFromNPM: haste clients from the npm registry, written by others and pinned by
// testdata/haste-clients/package-lock.json, upload a file to a real `make run` with the server address
// they are given; the links they print, and haste's GET /documents/{key}, read it back as it was.
func TestHasteClientsFromNPM(t *testing.T) {
	t.Parallel()
	modules := installHasteClients(t)
	const text = "package main\n\n// Sent by a haste client: héllo, ✓.\nfunc main() {}\n"
	file := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startMakeRun(t, testEnv(t))
	defer run.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/haste-clients/upload.js", run.base, file)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(modules, "node_modules"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the haste clients: %v\n%s", err, stderr.String())
	}
	var urls map[string]string
	if err := json.Unmarshal(out, &urls); err != nil || len(urls) != 2 {
		t.Fatalf("the haste clients printed %q (%v); want a URL from each", out, err)
	}
	for client, url := range urls {
		if got := fetch(t, url); got != text {
			t.Errorf("%s printed %s, which answers %q; want the file", client, url, got)
		}
		key := strings.TrimSuffix(url[strings.LastIndex(url, "/")+1:], ".go")
		var doc struct{ Key, Data string }
		if err := json.Unmarshal([]byte(fetch(t, run.base+"/documents/"+key)), &doc); err != nil || doc.Key != key || doc.Data != text {
			t.Errorf("%s's paste from GET /documents/%s: %+v (%v)", client, key, doc, err)
		}
	}
}

// installHasteClients installs the clients as make test does, from the pinned lock file into
// .pastebin (once per lock file), and returns their folder.
func installHasteClients(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("scripts/ensure-haste-clients.sh")
	cmd.Dir = "../.."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/ensure-haste-clients.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// fetch GETs url as a command-line client would, following redirects, and returns the body of a 200.
func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d %s (%v)", url, resp.StatusCode, body, err)
	}
	return string(body)
}
