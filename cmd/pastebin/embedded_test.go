package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeWithEmbeddedS3: with no S3 endpoint, serve keeps blobs in the embedded server's store,
// which it uses in process, and another command on the same folder (fsck) finds them through the
// running server's endpoint; after a restart they are still there.
func TestServeWithEmbeddedS3(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	for _, k := range []string{"PASTEBIN_S3_ENDPOINT", "PASTEBIN_S3_BUCKET", "PASTEBIN_S3_ACCESS_KEY_ID", "PASTEBIN_S3_SECRET_ACCESS_KEY"} {
		delete(env, k)
	}
	env["PASTEBIN_EMBEDDED_S3_DIR"] = t.TempDir()
	base, stop := startServe(t, env)
	url := createEmbeddedPaste(t, base, "kept by the embedded S3")
	if err := run(context.Background(), []string{"pastebin", "fsck"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Errorf("fsck through the running server's endpoint: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	base, stop = startServe(t, env)
	defer stop()
	url = base + url[strings.LastIndex(url, "/"):]
	if got := readEmbeddedRaw(t, url); got != "kept by the embedded S3" {
		t.Errorf("after a restart: %q", got)
	}
}

func createEmbeddedPaste(t *testing.T, base, content string) string {
	t.Helper()
	resp, err := http.Post(base+"/?expires_in=1h", "text/plain", strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	return strings.SplitN(string(body), "\n", 2)[0]
}

func readEmbeddedRaw(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return string(got)
}
