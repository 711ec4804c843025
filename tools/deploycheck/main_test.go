package deploycheck

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pastebin/blob/blobtest"
	"pastebin/cache/cachetest"
	"pastebin/store/storetest"
)

// repoRoot is the project's root, seen from this package's folder, where go test runs its tests.
const repoRoot = "../.."

// binaries holds the pastebin binary the tests build once, in a folder TestMain removes.
var binaries struct {
	dir  string
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploycheck-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binaries.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pastebinBinary builds cmd/pastebin as `make build` does, once for every test that asks.
func pastebinBinary(t *testing.T) string {
	t.Helper()
	binaries.once.Do(func() {
		binaries.path = filepath.Join(binaries.dir, "pastebin")
		cmd := exec.Command("go", "build", "-o", binaries.path, "./cmd/pastebin")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			binaries.err = fmt.Errorf("go build ./cmd/pastebin: %v\n%s", err, out)
		}
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return binaries.path
}

// serviceEnv points a pastebin at the test services make test starts, on a database, bucket and
// Redis prefix of this test's own.
func serviceEnv(t *testing.T) map[string]string {
	t.Helper()
	s3 := blobtest.Config(t)
	t.Cleanup(func() { blobtest.Remove(t, s3) })
	return map[string]string{
		"PASTEBIN_DATABASE_URL":         storetest.NewDirectDatabase(t),
		"PASTEBIN_REDIS_URL":            cachetest.URL(t, cachetest.Single),
		"PASTEBIN_REDIS_PREFIX":         "pb-deploycheck-" + randomHex(4) + ":",
		"PASTEBIN_S3_ENDPOINT":          s3.Endpoint,
		"PASTEBIN_S3_BUCKET":            s3.Bucket,
		"PASTEBIN_S3_ACCESS_KEY_ID":     s3.AccessKeyID,
		"PASTEBIN_S3_SECRET_ACCESS_KEY": s3.SecretAccessKey,
		"PASTEBIN_LOG_FORMAT":           "json",
	}
}

// serving is a started `pastebin serve`: where it listens, and what it logged.
type serving struct {
	public  string // http://host:port of the API
	metrics string // http://host:port of the metrics' own listener; empty when it has none
	mu      sync.Mutex
	log     strings.Builder
}

func (s *serving) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// startServing starts cmd, a `pastebin serve` that logs JSON to its standard output, and waits
// until it listens: on its public address, and on its metrics address too when withMetrics.
// Addresses come from its log, so it may listen on port 0. stop ends it when the test does.
func startServing(t *testing.T, cmd *exec.Cmd, withMetrics bool, stop func()) *serving {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serving{}
	exited, addrs := make(chan error, 1), make(chan [2]string, 2)
	go func() {
		s.readLog(stdout, addrs)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stop()
		<-exited
		if t.Failed() {
			t.Logf("serve's log:\n%s", s.logText())
		}
	})
	for s.public == "" || (withMetrics && s.metrics == "") {
		select {
		case a := <-addrs:
			if a[0] == "serving" {
				s.public = "http://" + a[1]
			} else {
				s.metrics = "http://" + a[1]
			}
		case err := <-exited:
			t.Fatalf("serve exited at start-up (%v):\n%s", err, s.logText())
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not listen within 60s:\n%s", s.logText())
		}
	}
	return s
}

func (s *serving) readLog(r io.Reader, addrs chan<- [2]string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s.mu.Lock()
		s.log.Write(sc.Bytes())
		s.log.WriteByte('\n')
		s.mu.Unlock()
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && (line.Msg == "serving" || line.Msg == "serving metrics") {
			addrs <- [2]string{line.Msg, line.Addr}
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
