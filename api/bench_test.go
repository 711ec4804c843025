package api_test

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkHTTP measures the main routes over loopback against real PostgreSQL, Redis and S3, one
// request at a time. GET /healthz, which touches none of them, is the baseline: on a shared machine
// the ratio of each route to it says more than its time alone (make bench prints both).
func BenchmarkHTTP(b *testing.B) {
	e := newEnv(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	small := e.create("package main\n\nfunc main() {}\n", "")
	// Past the cache's size limit: Redis holds its metadata, S3 serves its bytes on every read.
	large := e.create(strings.Repeat("0123456789abcdef\n", 8<<10), "")

	b.Run("healthz", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/healthz") })
	b.Run("raw, cached in Redis", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/raw/"+small.code) })
	b.Run("raw, 136KiB from S3", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/raw/"+large.code) })
	b.Run("metadata", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/api/v1/pastes/"+small.code) })
	b.Run("create, content already stored", func(b *testing.B) {
		benchCreate(b, client, e.srv.URL, func(int) string { return "the same bytes every time\n" })
	})
	b.Run("create, new content", func(b *testing.B) {
		run := rand.Text() // -count repeats this benchmark: each run needs content of its own
		benchCreate(b, client, e.srv.URL, func(i int) string { return fmt.Sprintf("new content %d of run %s\n", i, run) })
	})
}

func benchGet(b *testing.B, client *http.Client, url string) {
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
	}
}

func benchCreate(b *testing.B, client *http.Client, base string, content func(int) string) {
	i := 0
	for b.Loop() {
		i++
		resp, err := client.Post(base+"/", "text/plain", strings.NewReader(content(i)))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("create: %d", resp.StatusCode)
		}
	}
}
