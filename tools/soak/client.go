package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
)

// answer is one HTTP exchange as the checks need it.
type answer struct {
	status   int
	body     []byte
	header   http.Header
	sent     time.Time // just before the request left
	received time.Time // once the whole body was in, or the exchange failed
	err      error     // no answer: the server is down, or died mid-request
	wrote    bool      // the whole request went out: a server may have acted on it
	attempts int       // requests sent for this answer (try sends it again while none answers)
	replayed bool      // sent again after an attempt that went out got no answer: it may have been acted on
}

// lost says the request went out and no answer came back: the server may have acted on it (a
// create committed, a delete or a burn happened) before it died.
func (a answer) lost() bool { return a.err != nil && a.wrote }

// requestTimeout bounds one exchange. Nothing the soak does should take a second; a request that
// hangs this long is an answer lost.
const requestTimeout = 15 * time.Second

// client sends the load's requests to the serve processes, trying another one while one is down;
// or, balanced, to the balancer in front of them.
type client struct {
	http     *http.Client
	urls     []string
	balanced bool      // urls is the balancer: its own error answers are failed requests
	timeline *timeline // where failed requests are recorded, balanced
	stats    *stats
}

func newClient(urls []string, clients int, balanced bool, tl *timeline, st *stats) *client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = clients
	return &client{http: &http.Client{Transport: t, Timeout: requestTimeout}, urls: urls, balanced: balanced,
		timeline: tl, stats: st}
}

// do sends the request newReq builds for base and reads the whole answer.
func (c *client) do(ctx context.Context, base string, newReq func(ctx context.Context, base string) (*http.Request, error)) answer {
	req, err := newReq(ctx, base)
	if err != nil {
		return answer{err: err}
	}
	// Whether the request went out is traced rather than guessed from the error: the transport
	// retries a request that failed on a reused connection, and returns the retry's answer only.
	var wrote atomic.Int32
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Add(1)
			}
		},
	}))
	a := answer{sent: time.Now()}
	resp, err := c.http.Do(req)
	if err != nil {
		a.err, a.received, a.wrote = err, time.Now(), wrote.Load() > 0
		return a
	}
	// Written twice: the transport sent it again after the first went out, which a server may have
	// acted on before the connection broke.
	a.replayed = wrote.Load() > 1
	defer resp.Body.Close()
	a.body, a.err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a.received, a.wrote = time.Now(), true
	if a.err == nil {
		a.status, a.header = resp.StatusCode, resp.Header
	}
	if c.balanced {
		c.judgeBalanced(req, &a)
	}
	return a
}

// judgeBalanced reads the balancer's own answers, which the service never gives (HTML, not problem
// details): 502 or 504, the process died or hung with the request, is a request failed, which may
// have been acted on; 503, no process is ready, was sent nowhere. Failed requests go on the timeline.
func (c *client) judgeBalanced(req *http.Request, a *answer) {
	fromBalancer := a.err == nil && a.status >= 500 && !strings.Contains(a.header.Get("Content-Type"), "json")
	switch {
	case fromBalancer && (a.status == http.StatusBadGateway || a.status == http.StatusGatewayTimeout):
		a.err = fmt.Errorf("the balancer answered %d", a.status)
		c.stats.balancerFailed.Add(1)
	case fromBalancer && a.status == http.StatusServiceUnavailable:
		c.stats.balancerUnavailable.Add(1)
	case a.err != nil:
		c.stats.balancerFailed.Add(1)
	}
	if a.err != nil {
		c.timeline.add(&c.timeline.failures, window{from: a.sent, to: a.received,
			what: fmt.Sprintf("%s %s: %v", req.Method, req.URL.Path, a.err)})
	}
}

// try sends the request to a random serve process and, while the ones it reaches are down, to the
// others: a request to a killed process is expected to fail and is not a violation. lost says an
// attempt, this one or an earlier one, went out and got no answer (a process killed mid-request),
// or was sent again by the transport or the balancer after it went out: a create may have
// committed, a delete or a burn happened.
func (c *client) try(ctx context.Context, r *rand.Rand, newReq func(ctx context.Context, base string) (*http.Request, error)) (a answer, lost bool) {
	first := r.IntN(len(c.urls))
	for attempt := 0; attempt < max(2*len(c.urls), 4); attempt++ {
		a = c.do(ctx, c.urls[(first+attempt)%len(c.urls)], newReq)
		a.attempts = attempt + 1
		lost = lost || a.lost() || a.replayed || (c.balanced && c.timeline.duringKill(a.sent, a.received))
		if a.err == nil || ctx.Err() != nil {
			return a, lost
		}
		if attempt >= len(c.urls)-1 { // every process refused: give the restarts a moment
			sleep(ctx, 100*time.Millisecond)
		}
	}
	return a, lost
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
