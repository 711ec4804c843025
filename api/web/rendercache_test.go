package web

import (
	"fmt"
	"html/template"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"pastebin/store"
)

// countingRender stands in for renderContent: it counts its runs and the most running at once, and
// holds each run until release is closed.
type countingRender struct {
	release         chan struct{}
	runs, now, most atomic.Int64
}

func newCountingRender() *countingRender { return &countingRender{release: make(chan struct{})} }

func (c *countingRender) render(content []byte, language, filename string) rendered {
	c.runs.Add(1)
	n := c.now.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	<-c.release
	c.now.Add(-1)
	return rendered{HTML: template.HTML("<span>" + string(content) + "</span>"), Language: language}
}

func testRenderer(t *testing.T, cacheBytes int64, slots int, c *countingRender) *renderer {
	t.Helper()
	r := newRenderer(cacheBytes, slots, prometheus.NewRegistry())
	r.render, r.wait = c.render, time.Hour // a page waits for its slot as long as the test needs
	return r
}

func testPaste(code, content string) store.Paste {
	return store.Paste{Code: code, ContentHash: []byte("hash of " + content), Language: "go", Filename: "main.go"}
}

// value is a counter's or a gauge's value.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	return d.GetCounter().GetValue() + d.GetGauge().GetValue()
}

// eventually waits, a bounded number of times, until cond holds: for goroutines to reach a point
// that the test then checks by counting, never by time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 30000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never happened: %s", what)
}

func TestRendererRendersAPageOnce(t *testing.T) {
	t.Parallel()
	c := newCountingRender()
	r := testRenderer(t, 1<<20, 4, c)
	p := testPaste("abcdefghijk", "package main")
	const views = 16
	var wg sync.WaitGroup
	got := make([]rendered, views)
	for i := range views {
		wg.Go(func() { got[i] = r.page(p, []byte("package main")) })
	}
	// Every view has missed the cache before the one render ends: none found it done.
	eventually(t, "every view missed the cache", func() bool { return value(r.lookups.WithLabelValues("miss")) == views })
	close(c.release)
	wg.Wait()
	if n := c.runs.Load(); n != 1 {
		t.Errorf("%d concurrent views of one page rendered it %d times, want 1", views, n)
	}
	for i, v := range got {
		if v.HTML != "<span>package main</span>" {
			t.Errorf("view %d got %q", i, v.HTML)
		}
	}
	for range 5 {
		r.page(p, []byte("package main"))
	}
	if n, hits := c.runs.Load(), value(r.lookups.WithLabelValues("hit")); n != 1 || hits != 5 {
		t.Errorf("after 5 more views: %d renders, %v cache hits; want 1 and 5", n, hits)
	}
}

func TestRendererBoundsConcurrentRenders(t *testing.T) {
	t.Parallel()
	c := newCountingRender()
	const slots, pages = 2, 10
	r := testRenderer(t, 1<<20, slots, c)
	var wg sync.WaitGroup
	for i := range pages {
		wg.Go(func() { r.page(testPaste(fmt.Sprintf("code%07d", i), fmt.Sprint(i)), []byte(fmt.Sprint(i))) })
	}
	// Every page is rendering or waiting for a slot; unbounded, all ten would be rendering.
	eventually(t, "every page rendering or waiting", func() bool {
		return c.now.Load()+int64(value(r.waiting)) == pages
	})
	if n, w := c.now.Load(), value(r.waiting); n != slots || w != pages-slots {
		t.Errorf("%d renders running and %v waiting, want %d and %d", n, w, slots, pages-slots)
	}
	close(c.release)
	wg.Wait()
	if most, runs := c.most.Load(), c.runs.Load(); most != slots || runs != pages {
		t.Errorf("at most %d renders ran at once, %d in all; want %d and %d", most, runs, slots, pages)
	}
}

func TestRendererBusyShowsPlainText(t *testing.T) {
	t.Parallel()
	c := newCountingRender()
	r := testRenderer(t, 1<<20, 1, c)
	held := make(chan struct{})
	go func() { r.page(testPaste("aaaaaaaaaaa", "a"), []byte("a")); close(held) }()
	eventually(t, "the one slot taken", func() bool { return c.now.Load() == 1 })

	r.wait = time.Millisecond // the slot stays taken until release: no render can get it in time
	p := testPaste("bbbbbbbbbbb", "b")
	if v := r.page(p, []byte("b := 1\n")); v.Language != "Plain text" || !strings.Contains(string(v.HTML), "b := 1") {
		t.Errorf("a page with no render slot got %+v, want its text plain", v)
	}
	if busy := value(r.runs.WithLabelValues("busy")); busy != 1 {
		t.Errorf("busy renders: %v, want 1", busy)
	}
	close(c.release)
	<-held
	// The plain text was not the paste's rendering: the next view renders it.
	if v := r.page(p, []byte("b := 1\n")); v.Language != "go" {
		t.Errorf("the next view got %+v, want it highlighted", v)
	}
}

// Two pastes of the same bytes are rendered apart: a page that came from another paste's render
// would answer faster, telling its reader that someone else stored those bytes.
func TestRendererKeepsPastesApart(t *testing.T) {
	t.Parallel()
	c := newCountingRender()
	close(c.release)
	r := testRenderer(t, 1<<20, 1, c)
	a, b := testPaste("aaaaaaaaaaa", "same"), testPaste("bbbbbbbbbbb", "same")
	for _, p := range []store.Paste{a, b, a, b} {
		r.page(p, []byte("same"))
	}
	if n := c.runs.Load(); n != 2 {
		t.Errorf("two pastes of the same bytes, viewed twice each: %d renders, want 2", n)
	}
	other := a
	other.Language = "python" // what the lexer is chosen by is part of the key
	r.page(other, []byte("same"))
	if n := c.runs.Load(); n != 3 {
		t.Errorf("after another language: %d renders, want 3", n)
	}
}

func TestRenderCacheBoundedByBytes(t *testing.T) {
	t.Parallel()
	v := rendered{HTML: template.HTML("<span>" + strings.Repeat("x", 1000) + "</span>")}
	key := func(i int) renderKey { return renderKey{code: fmt.Sprintf("code%07d", i)} }
	cost := key(0).cost(v)
	c := newRenderCache(10 * cost)
	for i := range 25 {
		c.add(key(i), v)
		if c.bytes > c.max {
			t.Fatalf("after %d entries the cache holds %d bytes, more than its %d", i+1, c.bytes, c.max)
		}
	}
	if c.lru.Len() != 10 || c.bytes != 10*cost {
		t.Errorf("the cache holds %d entries, %d bytes; want 10, %d", c.lru.Len(), c.bytes, 10*cost)
	}
	if _, ok := c.get(key(14)); ok {
		t.Error("the cache kept an entry older than the last 10")
	}
	if _, ok := c.get(key(15)); !ok {
		t.Error("the cache lost one of the last 10 entries")
	}
	big := rendered{HTML: v.HTML + v.HTML}
	c.add(key(99), big) // two entries' worth: more than an eighth of the cache
	if _, ok := c.get(key(99)); ok {
		t.Error("the cache kept an entry of more than an eighth of its size")
	}
	off := newRenderCache(0)
	off.add(key(1), v)
	if _, ok := off.get(key(1)); ok {
		t.Error("a cache of 0 bytes kept an entry")
	}
}
