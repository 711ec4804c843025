package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The foreground load's requests, by kind.
const (
	kindCachedRaw    = "cached raw read"
	kindCachedPage   = "cached page read"
	kindUncachedRaw  = "uncached raw read"
	kindUncachedPage = "uncached page read"
	kindMeta         = "metadata read"
	kindCreateNew    = "create, new content"
	kindCreateShared = "create, stored content"
	kindDelete       = "delete"
)

// mix is the share of each kind in the load, in tenths of a percent: mostly reads of popular
// pastes (served from Redis), some first reads (PostgreSQL and S3), a tenth creates, a few deletes.
var mix = []struct {
	kind  string
	share int
}{
	{kindCachedRaw, 450}, {kindCachedPage, 150}, {kindUncachedRaw, 80}, {kindUncachedPage, 40},
	{kindMeta, 130}, {kindCreateNew, 60}, {kindCreateShared, 70}, {kindDelete, 20},
}

// hotPastes is how many of the live sample the cached reads go to.
const hotPastes = 1000

// outcome is one request of the load.
type outcome struct {
	at      time.Time // when it was sent
	latency time.Duration
	kind    string
	ok      bool
}

// foreground is an open-loop load over the replicas with vegeta: requests start on a fixed schedule
// whatever the answers do, so a slow server shows as latency, not as fewer requests.
type foreground struct {
	urls     []string
	hot      []string // live pastes read again and again (cached after the first read)
	isHot    map[string]bool
	cold     []string        // live pastes read once each
	coldNext atomic.Int64    // the next cold paste to read
	created  chan createdOne // pastes the load created, for its deletes
	next     atomic.Uint64

	mu       sync.Mutex
	outcomes []outcome
	record   bool
}

type createdOne struct{ url, token string }

func newForeground(urls, sample []string) *foreground {
	hot := min(hotPastes, len(sample)/2)
	f := &foreground{urls: urls, hot: sample[:hot], cold: sample[hot:], created: make(chan createdOne, 100000),
		isHot: map[string]bool{}}
	for _, code := range f.hot {
		f.isHot[code] = true
	}
	return f
}

// attack runs the load at rate requests per second until stop is closed, recording outcomes only
// while record is set.
func (f *foreground) attack(rate int, stop <-chan struct{}) {
	atk := vegeta.NewAttacker(vegeta.Timeout(30*time.Second), vegeta.KeepAlive(true), vegeta.Connections(256),
		vegeta.MaxWorkers(2048), vegeta.MaxBody(4096), vegeta.Redirects(vegeta.NoFollow))
	results := atk.Attack(f.targeter(), vegeta.Rate{Freq: rate, Per: time.Second}, 0, "foreground")
	go func() { <-stop; atk.Stop() }()
	for r := range results {
		f.observe(r)
	}
}

func (f *foreground) setRecording(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record = on
}

// take returns the outcomes recorded so far and forgets them.
func (f *foreground) take() []outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.outcomes
	f.outcomes = nil
	return out
}

// targeter picks each request's kind at random by the mix, and sends requests to the replicas in
// turn.
func (f *foreground) targeter() vegeta.Targeter {
	return func(t *vegeta.Target) error {
		base := f.urls[f.next.Add(1)%uint64(len(f.urls))]
		kind := pick()
		*t = vegeta.Target{Method: http.MethodGet, Header: http.Header{}}
		switch kind {
		case kindCachedRaw:
			t.URL = base + "/raw/" + f.hot[rand.N(len(f.hot))]
		case kindCachedPage:
			t.URL = base + "/" + f.hot[rand.N(len(f.hot))]
			t.Header.Set("Accept", "text/html")
		case kindUncachedRaw, kindUncachedPage:
			i := int(f.coldNext.Add(1)) % len(f.cold) // past the end: read again, cached by then
			t.URL = base + "/raw/" + f.cold[i]
			if kind == kindUncachedPage {
				t.URL = base + "/" + f.cold[i]
				t.Header.Set("Accept", "text/html")
			}
		case kindMeta:
			t.URL = base + "/api/v1/pastes/" + f.hot[rand.N(len(f.hot))]
		case kindCreateNew:
			t.Method, t.URL = http.MethodPost, base+createNewPath
			t.Body = fmt.Appendf(nil, "heavy day paste %d %d", time.Now().UnixNano(), rand.Int64())
			t.Header.Set("Accept", "application/json")
		case kindCreateShared:
			t.Method, t.URL = http.MethodPost, base+createSharedPath
			t.Body = fmt.Appendf(nil, "heavy day shared paste %d", rand.N(50))
			t.Header.Set("Accept", "application/json")
		case kindDelete:
			select {
			case c := <-f.created:
				t.Method, t.URL = http.MethodDelete, c.url
				t.Header.Set("Authorization", "Bearer "+c.token)
			default: // nothing created yet to delete
				t.URL = base + "/raw/" + f.hot[rand.N(len(f.hot))]
			}
		}
		return nil
	}
}

// The creates of new and of stored content differ in their address, so that a result tells which.
const (
	createNewPath    = "/?expires_in=30d"
	createSharedPath = "/?expires_in=29d"
)

// kindOf tells a result's kind from its request.
func (f *foreground) kindOf(r *vegeta.Result) string {
	path := r.URL[strings.Index(r.URL[len("http://"):], "/")+len("http://"):]
	code := path[strings.LastIndex(path, "/")+1:]
	switch {
	case r.Method == http.MethodDelete:
		return kindDelete
	case r.Method == http.MethodPost && path == createNewPath:
		return kindCreateNew
	case r.Method == http.MethodPost:
		return kindCreateShared
	case strings.HasPrefix(path, "/api/v1/pastes/"):
		return kindMeta
	case strings.HasPrefix(path, "/raw/") && f.isHot[code]:
		return kindCachedRaw
	case strings.HasPrefix(path, "/raw/"):
		return kindUncachedRaw
	case f.isHot[code]:
		return kindCachedPage
	}
	return kindUncachedPage
}

func pick() string {
	n := rand.N(1000)
	for _, m := range mix {
		if n < m.share {
			return m.kind
		}
		n -= m.share
	}
	return mix[0].kind
}

// wantStatus is the answer each kind of request should get.
func wantStatus(kind string) uint16 {
	switch kind {
	case kindCreateNew, kindCreateShared:
		return http.StatusCreated
	case kindDelete:
		return http.StatusNoContent
	}
	return http.StatusOK
}

func (f *foreground) observe(r *vegeta.Result) {
	kind := f.kindOf(r)
	ok := r.Error == "" && r.Code == wantStatus(kind)
	f.mu.Lock()
	if f.record {
		f.outcomes = append(f.outcomes, outcome{at: r.Timestamp, latency: r.Latency, kind: kind, ok: ok})
	}
	f.mu.Unlock()
	if ok && r.Method == http.MethodPost {
		var p struct {
			URL         string `json:"url"`
			Code        string `json:"code"`
			DeleteToken string `json:"delete_token"`
		}
		if json.Unmarshal(r.Body, &p) == nil && p.DeleteToken != "" {
			base := r.URL[:strings.Index(r.URL[len("http://"):], "/")+len("http://")]
			select {
			case f.created <- createdOne{url: base + "/api/v1/pastes/" + p.Code, token: p.DeleteToken}:
			default:
			}
		}
	}
}
