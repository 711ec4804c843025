package blob_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"pastebin/blob/blobtest"
)

// crashChildEnv, set to a folder, makes TestEmbeddedPutSurvivesKill the child that puts into an
// embedded store there until it is killed.
const crashChildEnv = "PASTEBIN_TEST_EMBEDDED_CRASH_DIR"

// TestEmbeddedPutSurvivesKill: a put that answered survives its process being killed (SIGKILL)
// while other puts are in flight, and a put cut short leaves no part of an object: the store
// opens again with every answered put's bytes, and every object it lists whole.
func TestEmbeddedPutSurvivesKill(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		putUntilKilled(t, dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmbeddedPutSurvivesKill$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const enough = 300
	var answered []string
	for sc := bufio.NewScanner(out); len(answered) < enough && sc.Scan(); {
		if key, ok := strings.CutPrefix(sc.Text(), "put "); ok {
			answered = append(answered, key)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: its error says so
	if len(answered) < enough {
		t.Fatalf("the child stopped after %d puts", len(answered))
	}

	b := embeddedBucket(t, startEmbedded(t, dir).Endpoint)
	for _, key := range answered {
		if got := getObject(t, b, key); got != crashContent(key) {
			t.Errorf("%s: %d bytes after the kill, want its %d", key, len(got), len(crashContent(key)))
		}
	}
	for _, key := range blobtest.Keys(t, b) {
		if got := getObject(t, b, key); got != crashContent(key) {
			t.Errorf("%s is listed with %d bytes, not its %d", key, len(got), len(crashContent(key)))
		}
	}
}

// putUntilKilled puts from 8 clients at once into the embedded store in dir, in process as serve
// does, printing each key once its put has answered, for longer than the parent waits.
func putUntilKilled(t *testing.T, dir string) {
	b, err := startEmbedded(t, dir).Bucket("pastebin")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				key := fmt.Sprintf("blobs/%02d/%05d", w, i)
				if err := b.Put(context.Background(), key, []byte(crashContent(key))); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				fmt.Printf("put %s\n", key)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func crashContent(key string) string { return strings.Repeat(key+"\n", 64) }
