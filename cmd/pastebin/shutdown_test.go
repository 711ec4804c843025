package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"pastebin/store/storetest"
)

// TestMain lets the test binary run as the pastebin binary itself, for the tests that need a real
// process to signal.
func TestMain(m *testing.M) {
	if os.Getenv("PASTEBIN_TEST_AS_BINARY") != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveProcess is `pastebin serve` in a process of its own.
type serveProcess struct {
	cmd     *exec.Cmd
	base    string // the API's URL
	metrics string // the metrics' URL
	exited  chan error
	mu      sync.Mutex
	log     strings.Builder
}

// startServeProcess starts serve with env and waits until both its listeners are up.
func startServeProcess(t *testing.T, env map[string]string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = []string{"PASTEBIN_TEST_AS_BINARY=1", "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, exited: make(chan error, 1)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("serve's log:\n%s", p.logText())
		}
	})
	addrs := make(chan [2]string, 2)
	go p.readLog(stdout, addrs)
	for p.base == "" || p.metrics == "" {
		select {
		case a := <-addrs:
			if a[0] == "serving" {
				p.base = "http://" + a[1]
			} else {
				p.metrics = "http://" + a[1] + "/metrics"
			}
		case <-p.exited:
			t.Fatalf("serve exited at start-up:\n%s", p.logText())
		case <-time.After(30 * time.Second):
			t.Fatalf("serve did not start within 30s:\n%s", p.logText())
		}
	}
	return p
}

// readLog keeps serve's output and sends the addresses it says it serves on.
func (p *serveProcess) readLog(r io.Reader, addrs chan<- [2]string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p.mu.Lock()
		p.log.WriteString(sc.Text() + "\n")
		p.mu.Unlock()
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && strings.HasPrefix(line.Msg, "serving") {
			addrs <- [2]string{line.Msg, line.Addr}
		}
	}
	p.exited <- p.cmd.Wait()
	close(p.exited)
}

func (p *serveProcess) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *serveProcess) signal(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 20ms for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGracefulShutdown: SIGTERM under load drops no request. /readyz turns 503 first while every
// other request is still served, with Connection: close so kept-alive clients move on; the load,
// like a balancer, stops sending once it sees the 503; a request still in flight when the listener
// closes (at the second SIGTERM here, rather than after a drain delay) finishes; the cleanup
// workers finish the batches they claimed; and no paste is left claimed.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, storetest.SeedSpec{Pastes: 1200, Expired: 1000, Shared: 0.5, Tag: "G"})
	const admin = "the-admin-token-of-this-test"
	db, _ := url.Parse(d.env["PASTEBIN_DATABASE_URL"])
	q := db.Query()
	q.Set("application_name", "pb-graceful")
	db.RawQuery = q.Encode()
	for k, v := range map[string]string{
		"PASTEBIN_DATABASE_URL": db.String(), "PASTEBIN_METRICS_ADDR": "127.0.0.1:0", "PASTEBIN_DRAIN_DELAY": "10m",
		"PASTEBIN_SHUTDOWN_TIMEOUT": "1m", "PASTEBIN_ADMIN_TOKEN": admin, "PASTEBIN_RATE_CREATE": "off",
		"PASTEBIN_CLEANUP_WORKERS": "2", "PASTEBIN_CLEANUP_BATCH_SIZE": "200",
	} {
		d.env[k] = v
	}
	p := startServeProcess(t, d.env)
	if got := httpGet(t, p.metrics); got.status != http.StatusOK || !strings.Contains(got.body, "# TYPE pastebin_") {
		t.Errorf("metrics on their own address: %d %.200s", got.status, got.body)
	}
	if got := httpGet(t, p.base+"/metrics"); got.status != http.StatusNotFound {
		t.Errorf("/metrics on the public address: %d, want 404", got.status)
	}

	release := holdContent(t, d)
	l := startLoad(t, p.base, 4)
	waitFor(t, "the load made 100 requests", func() bool { return l.ok.Load() >= 100 })
	startCleanup(t, p.base, admin)
	waitFor(t, "a cleanup batch waits inside its finishing transaction", func() bool {
		return storetest.Count(t, d.store.Pool(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'pb-graceful' AND wait_event_type = 'Lock'`) > 0
	})

	p.signal(t)
	waitFor(t, "/readyz answers 503 stopping", func() bool {
		got := httpGet(t, p.base+"/readyz")
		return got.status == http.StatusServiceUnavailable && strings.Contains(got.body, `"stopping"`)
	})
	before := l.ok.Load()
	waitFor(t, "the load was served while draining", func() bool { return l.ok.Load() >= before+20 })
	l.stop() // the balancer saw the 503
	if l.closed.Load() == 0 {
		t.Error("no answer while draining asked its client to close the connection")
	}

	slow := startSlowCreate(t, p.base)
	p.signal(t) // the second: the drain delay is over, the listener closes
	waitFor(t, "the listener is closed", func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	code := slow.finish(t)
	release()
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("serve exited with %v, want 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not exit within a minute of its cleanup batch being released")
	}

	if n := l.failed.Load(); n > 0 {
		t.Errorf("%d of %d requests failed: %s", n, l.ok.Load()+n, l.firstErr())
	}
	if n := storetest.Count(t, d.store.Pool(), `SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims`); n != 0 {
		t.Errorf("%d pastes left claimed after the shutdown", n)
	}
	if n := storetest.Count(t, d.store.Pool(), `SELECT count(*) FROM pastes WHERE short_code = $1 AND status = 'NOT_EXPIRED'`, code); n != 1 {
		t.Errorf("the paste created across the shutdown is not there")
	}
}

// holdContent locks every content row in a transaction until release is called: a cleanup batch
// then waits inside its finishing transaction, while the load, which creates content of its own
// after this, goes on.
func holdContent(t *testing.T, d deployment) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM content FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(release)
	return release
}

func startCleanup(t *testing.T, base, admin string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/cleanup", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start cleanup: %d", resp.StatusCode)
	}
}

// load is clients creating, reading and deleting pastes on kept-alive connections until stopped.
type load struct {
	ok, failed, closed atomic.Int64
	stop               func() // stops sending and waits for the requests in flight
	mu                 sync.Mutex
	errs               []string
}

func (l *load) firstErr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == 0 {
		return ""
	}
	return l.errs[0]
}

func startLoad(t *testing.T, base string, clients int) *load {
	t.Helper()
	l := &load{}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: time.Minute}
	var sending atomic.Bool
	sending.Store(true)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := 0; sending.Load(); i++ {
				l.round(client, base, fmt.Sprintf("client %d, paste %d", c, i))
			}
		})
	}
	var once sync.Once
	l.stop = func() { once.Do(func() { sending.Store(false); wg.Wait() }) }
	t.Cleanup(l.stop)
	return l
}

// round creates a paste (with an Idempotency-Key), reads it and deletes it.
func (l *load) round(client *http.Client, base, content string) {
	req, _ := http.NewRequest(http.MethodPost, base+"/?expires_in=1h", strings.NewReader(content))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", "graceful-"+strings.ReplaceAll(content, " ", "-"))
	var created struct {
		Code        string `json:"code"`
		DeleteToken string `json:"delete_token"`
	}
	if !l.do(client, req, http.StatusCreated, &created) {
		return
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/raw/"+created.Code, nil)
	l.do(client, req, http.StatusOK, nil)
	req, _ = http.NewRequest(http.MethodDelete, base+"/api/v1/pastes/"+created.Code, nil)
	req.Header.Set("Authorization", "Bearer "+created.DeleteToken)
	l.do(client, req, http.StatusNoContent, nil)
}

func (l *load) do(client *http.Client, req *http.Request, want int, out any) bool {
	resp, err := client.Do(req)
	if err == nil {
		defer resp.Body.Close()
		if resp.Close {
			l.closed.Add(1)
		}
		if resp.StatusCode != want {
			err = fmt.Errorf("%s %s: %d, want %d", req.Method, req.URL.Path, resp.StatusCode, want)
		} else if out != nil {
			err = json.NewDecoder(resp.Body).Decode(out)
		}
	}
	if err != nil {
		l.failed.Add(1)
		l.mu.Lock()
		l.errs = append(l.errs, err.Error())
		l.mu.Unlock()
		return false
	}
	l.ok.Add(1)
	return true
}

// slowCreate is a create whose body is still on its way.
type slowCreate struct {
	body *io.PipeWriter
	done chan answer
}

// startSlowCreate sends a create's headers and the first half of its body, and returns once the
// server's handler reads it: asked to (Expect: 100-continue), the server says so (100 Continue) when
// the handler first reads the body. Until the server has accepted a connection, it is the kernel's,
// and closing the listener resets it: those requests are the balancer's to stop sending.
func startSlowCreate(t *testing.T, base string) *slowCreate {
	t.Helper()
	pr, pw := io.Pipe()
	s := &slowCreate{body: pw, done: make(chan answer, 1)}
	reading := make(chan struct{})
	req, _ := http.NewRequest(http.MethodPost, base+"/?expires_in=1h", pr)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Expect", "100-continue")
	req.ContentLength = int64(len("across the shutdown"))
	var once sync.Once
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		Got100Continue: func() { once.Do(func() { close(reading) }) },
	}))
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			s.done <- answer{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		s.done <- answer{resp.StatusCode, string(b)}
	}()
	select {
	case <-reading:
	case a := <-s.done:
		t.Fatalf("the slow create ended before its body was sent: %d %s", a.status, a.body)
	}
	if _, err := pw.Write([]byte("across the ")); err != nil {
		t.Fatal(err)
	}
	return s
}

// finish sends the rest of the body and returns the code of the paste the create answered.
func (s *slowCreate) finish(t *testing.T) string {
	t.Helper()
	_, _ = s.body.Write([]byte("shutdown"))
	s.body.Close()
	got := <-s.done
	var created struct {
		Code string `json:"code"`
	}
	if got.status != http.StatusCreated || json.Unmarshal([]byte(got.body), &created) != nil {
		t.Fatalf("the create in flight across the shutdown: %d %s", got.status, got.body)
	}
	return created.Code
}
