package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"pastebin/api"
)

// stalledUpload opens a connection of its own and sends a create that declares a large body, as
// client, then only its first bytes. The answer, when the server gives one, comes on the channel
// (0 when the connection ends without one).
func stalledUpload(t *testing.T, addr, client string) <-chan int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // bounds the test, never reached when the server answers
	head := "POST / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: " + client + "\r\nContent-Length: 500000\r\n\r\n"
	if _, err := io.WriteString(conn, head+"abc"); err != nil {
		t.Fatal(err)
	}
	answer := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answer <- 0
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	return answer
}

// inFlight reads pastebin_uploads_in_flight from /metrics.
func (e *env) inFlight() int {
	e.t.Helper()
	for _, l := range strings.Split(e.get("/metrics").text(), "\n") {
		if v, ok := strings.CutPrefix(l, "pastebin_uploads_in_flight "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				e.t.Fatalf("pastebin_uploads_in_flight %q: %v", v, err)
			}
			return n
		}
	}
	e.t.Fatal("no pastebin_uploads_in_flight in /metrics")
	return 0
}

// TestStalledUploadsStarveNoOne: one client opens more stalled uploads (a large declared body, a
// few bytes sent) than there are upload slots. It holds its share of the slots and no more, its
// other uploads are refused 429, and another client's create is answered 201 at once, not after
// waiting for a slot.
func TestStalledUploadsStarveNoOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) {
		c.MaxConcurrentUploads, c.MaxUploadsPerClient = 4, 2
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}))
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	const stalled = 6
	answers := make([]<-chan int, stalled)
	for i := range answers {
		answers[i] = stalledUpload(t, addr, "203.0.113.1")
	}
	var refused []int
	waitFor(t, func() bool { // each stalled upload holds a slot or has been refused
		for _, a := range answers {
			select {
			case status := <-a:
				refused = append(refused, status)
			default:
			}
		}
		return len(refused)+e.inFlight() == stalled
	})

	start := time.Now()
	r := e.do(e.request(http.MethodPost, "/", strings.NewReader("from someone else"), "X-Forwarded-For", "203.0.113.2"))
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("another client's create, while one client holds %d stalled uploads: %d after %v, want 201: %s",
			stalled, r.StatusCode, time.Since(start).Round(time.Millisecond), r.body)
	}
	if got := e.inFlight(); got != 2 {
		t.Errorf("%d uploads in flight, want the stalling client's share of 2", got)
	}
	if fmt.Sprint(refused) != "[429 429 429 429]" {
		t.Errorf("the stalling client's uploads past its share: %v, want four 429", refused)
	}
	r = e.do(e.request(http.MethodPost, "/", strings.NewReader("one more"), "X-Forwarded-For", "203.0.113.1"))
	checkRefused(t, r, http.StatusTooManyRequests, "rate-limited", "1")
	if m := e.get("/metrics").text(); !strings.Contains(m, `pastebin_requests_refused_total{limit="client_uploads"} 5`) {
		t.Errorf("metrics do not count the refused uploads:\n%s", grep(m, "refused"))
	}
}

// TestStalledUploadIsCutOff: a body that delivers less than the minimum upload rate in a window is
// cut off (408 body-timeout) and gives its slot back, long before the server's read timeout (none
// here). Ordinary uploads, which arrive at once, are never cut.
func TestStalledUploadIsCutOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) {
		c.MaxConcurrentUploads = 1
		c.MinUploadRate = api.UploadRate{Bytes: 1024, Window: 200 * time.Millisecond}
	}))
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	var p struct{ Type string }
	resp, body := e.exchange(t, addr, "POST / HTTP/1.1\nHost: x\nContent-Length: 500000\n", "the first bytes", false)
	_ = json.Unmarshal([]byte(body), &p)
	if resp.StatusCode != http.StatusRequestTimeout || p.Type != "/problems/body-timeout" {
		t.Fatalf("a stalled upload's answer: %d %s, want 408 body-timeout", resp.StatusCode, body)
	}
	for i := range 3 {
		r := e.do(e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(fmt.Sprintf(`{"content":"%d %s"}`, i,
			strings.Repeat("x", 100_000))), "Content-Type", "application/json"))
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("create after the cut: %d, want 201: %.200s", r.StatusCode, r.body)
		}
	}
	m := e.get("/metrics").text()
	if !strings.Contains(m, `pastebin_requests_refused_total{limit="upload_rate"} 1`) || !strings.Contains(m, "pastebin_uploads_in_flight 0") {
		t.Errorf("metrics do not count the cut upload, or a slot is still held:\n%s", grep(m, "upload"))
	}
}
