package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// pasteRef is a paste a test created over HTTP.
type pasteRef struct {
	code, token string
}

// createPaste creates a paste at base and returns it.
func createPaste(t *testing.T, base, content string) pasteRef {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/?expires_in=1h", strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Code        string `json:"code"`
		DeleteToken string `json:"delete_token"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&got) != nil {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	return pasteRef{code: got.Code, token: got.DeleteToken}
}

// answer is a status and a body.
type answer struct {
	status int
	body   string
}

func httpGet(t *testing.T, url string) answer {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, string(b)}
}
