package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// TestMakeRunUsesConfiguredServices runs the real `make run` with PASTEBIN_DATABASE_URL and
// PASTEBIN_REDIS_URL naming services it did not start (a database of the test PostgreSQL, the test
// profile's Redis Cluster): it must start no PostgreSQL or Redis of its own, say which services it
// used, and serve from those: the paste lands in the given database, its cache entry and rate count
// in the cluster.
func TestMakeRunUsesConfiguredServices(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["PASTEBIN_REDIS_URL"] = cachetest.URL(t, cachetest.Cluster)
	privateRedis := "127.0.0.1:" + strconv.Itoa(63790+portOffset(t))
	privateBefore := answers(privateRedis)

	run := startMakeRun(t, env)
	resp, err := http.Post(run.base+"/?expires_in=1h", "text/plain", strings.NewReader("through make run"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	code := strings.TrimPrefix(strings.SplitN(string(body), "\n", 2)[0], run.base+"/")
	if resp, err = http.Get(run.base + "/raw/" + code); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !privateBefore && answers(privateRedis) {
		t.Errorf("make run started a Redis of its own on %s", privateRedis)
	}
	stderr := run.stop()

	prefix := env["PASTEBIN_REDIS_PREFIX"]
	rdb := cachetest.ClientOf(t, cachetest.Cluster)
	for _, key := range []string{prefix + "paste:" + code, prefix + "rate:create:127.0.0.1"} {
		if n, err := rdb.Exists(context.Background(), key).Result(); err != nil || n != 1 {
			t.Errorf("the cluster holds %d of %s (%v): make run did not use the Redis it was given", n, key, err)
		}
	}
	st, err := store.Open(context.Background(), env["PASTEBIN_DATABASE_URL"], slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := storetest.Count(t, st.Pool(), `SELECT count(*) FROM pastes WHERE short_code = $1`, code); n != 1 {
		t.Errorf("the given database holds %d pastes of code %s, want 1", n, code)
	}
	for _, want := range []string{
		"services[run]: postgres: " + env["PASTEBIN_DATABASE_URL"] + " (yours, from PASTEBIN_DATABASE_URL)",
		"services[run]: redis: " + env["PASTEBIN_REDIS_URL"] + " (yours, from PASTEBIN_REDIS_URL)",
		"services[run]: s3: " + env["PASTEBIN_S3_ENDPOINT"] + " (yours, from PASTEBIN_S3_ENDPOINT)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("make run did not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "started now") {
		t.Errorf("make run started a service although every one was configured:\n%s", stderr)
	}
}

// TestServicesEnvKeepsConfiguredURLs: the run profile's environment leaves a URL the user set alone,
// and exports the private one of what the user did not set.
func TestServicesEnvKeepsConfiguredURLs(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("scripts/services.sh", "run", "env")
	cmd.Dir = "../.."
	cmd.Env = append(withoutVars(os.Environ(), "PASTEBIN_"), "PASTEBIN_REDIS_URL=redis://10.0.0.1:6379/0",
		"PASTEBIN_PORT_OFFSET="+strconv.Itoa(portOffset(t)))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("services.sh run env: %v", err)
	}
	if !strings.Contains(string(out), "export PASTEBIN_DATABASE_URL=") || strings.Contains(string(out), "PASTEBIN_REDIS_URL") {
		t.Errorf("with only PASTEBIN_REDIS_URL set, services.sh run env printed:\n%s\nwant the private database and no Redis", out)
	}
}

// portOffset is the PASTEBIN_PORT_OFFSET the services of this checkout run with.
func portOffset(t *testing.T) int {
	t.Helper()
	v := os.Getenv("PASTEBIN_PORT_OFFSET")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("PASTEBIN_PORT_OFFSET=%q", v)
	}
	return n
}

func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// withoutVars is env without the variables whose names start with prefix.
func withoutVars(env []string, prefix string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, prefix) })
}

// makeRun is a `make run` in progress: the address it serves on, and what it wrote to stderr.
type makeRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	mu     sync.Mutex
	stderr strings.Builder
	done   chan error
}

// startMakeRun runs `make run` in the project with exactly env (and the port offset), building the
// binary into a folder of the test, and waits until it serves.
func startMakeRun(t *testing.T, env map[string]string) *makeRun {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "run", "BIN="+filepath.Join(t.TempDir(), "pastebin"))
	cmd.Dir = "../.."
	cmd.Env = runEnv(t, env)
	m, err := launchMakeRun(t, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runEnv is the environment of a `make run`: this process's without any PASTEBIN_ or MAKE variable
// (an outer make's jobserver flags included), then the port offset and env.
func runEnv(t *testing.T, env map[string]string) []string {
	t.Helper()
	vars := append(withoutVars(withoutVars(os.Environ(), "PASTEBIN_"), "MAKE"), "PASTEBIN_PORT_OFFSET="+strconv.Itoa(portOffset(t)))
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return vars
}

// launchMakeRun starts cmd, a `make run` or a script ending in one, in a process group of its own,
// and waits until serve logs that it serves. It answers an error, with what cmd wrote to stderr,
// when cmd ends before that.
func launchMakeRun(t *testing.T, cmd *exec.Cmd) (*makeRun, error) {
	t.Helper()
	m := &makeRun{t: t, cmd: cmd, done: make(chan error, 1)}
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // make, the script and serve: stopped together
	m.cmd.Stderr = writerFunc(func(p []byte) (int, error) { m.mu.Lock(); defer m.mu.Unlock(); return m.stderr.Write(p) })
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL) }) // if stop never ran
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Addr
			}
		}
		m.done <- m.cmd.Wait()
	}()
	select {
	case a := <-addr:
		m.base = "http://" + a
		return m, nil
	case err := <-m.done:
		return nil, fmt.Errorf("make run ended before it served: %v\n%s", err, m.output())
	case <-time.After(5 * time.Minute): // the build included, on a busy machine
		t.Fatalf("make run did not serve within 5 minutes:\n%s", m.output())
		return nil, nil
	}
}

// stop interrupts make run as Ctrl+C does and returns what it wrote to stderr.
func (m *makeRun) stop() string {
	m.t.Helper()
	if err := syscall.Kill(-m.cmd.Process.Pid, syscall.SIGINT); err != nil {
		m.t.Fatal(err)
	}
	select {
	case <-m.done:
	case <-time.After(time.Minute):
		m.t.Errorf("make run did not stop within a minute of Ctrl+C:\n%s", m.output())
	}
	return m.output()
}

func (m *makeRun) output() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stderr.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
