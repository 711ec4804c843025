package web

import (
	"encoding/hex"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"pastebin/store"
)

// renderWait is how long a page waits for a render slot before it shows its paste as plain text.
const renderWait = time.Second

// renderer renders the content of paste pages. Highlighting is costly (see maxHighlightBytes) and
// its result never changes, so each paste is rendered once: concurrent views of a page share one
// render, later views take it from a cache bounded by bytes, and at most a bounded number of
// renders run at once, so that pages of many different pastes cannot take every core.
type renderer struct {
	cache   *renderCache // nil: no cache
	flights singleflight.Group
	slots   chan struct{} // one token per render running
	wait    time.Duration
	render  func(content []byte, language, filename string) rendered // renderContent; tests count it
	lookups *prometheus.CounterVec
	runs    *prometheus.CounterVec
	waiting prometheus.Gauge
}

// newRenderer bounds the cache at cacheBytes (0: no cache) and the renders at maxRenders at once
// (0: half the processors Go uses, at least one, which leaves the others to every other request).
func newRenderer(cacheBytes int64, maxRenders int, reg prometheus.Registerer) *renderer {
	if maxRenders <= 0 {
		maxRenders = max(1, runtime.GOMAXPROCS(0)/2)
	}
	r := &renderer{
		cache: newRenderCache(cacheBytes), slots: make(chan struct{}, maxRenders), wait: renderWait, render: renderContent,
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastebin_render_cache_lookups_total", Help: "Paste pages' lookups of their rendered content: hit, miss.",
		}, []string{"result"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastebin_renders_total", Help: "Renders of paste content: done, or busy (no render slot in time: shown as plain text).",
		}, []string{"result"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pastebin_renders_waiting", Help: "Paste pages waiting for a render slot now.",
		}),
	}
	for _, res := range []string{"hit", "miss"} {
		r.lookups.WithLabelValues(res) // every series from the start, so ratios never lack one
	}
	for _, res := range []string{"done", "busy"} {
		r.runs.WithLabelValues(res)
	}
	reg.MustRegister(r.lookups, r.runs, r.waiting)
	return r
}

// page is the rendering of p's content for its page: cached, or rendered once however many
// readers ask at the same time. Each paste has entries of its own, even when another paste holds
// the same bytes: a page that answered faster because someone else's paste of the same content
// was viewed would tell its reader so, which no answer may (openapi.yaml).
func (r *renderer) page(p store.Paste, content []byte) rendered {
	k := renderKey{code: p.Code, hash: string(p.ContentHash), language: p.Language, filename: p.Filename}
	if v, ok := r.cache.get(k); ok {
		r.lookups.WithLabelValues("hit").Inc()
		return v
	}
	r.lookups.WithLabelValues("miss").Inc()
	v, _, _ := r.flights.Do(k.String(), func() (any, error) {
		// A view that missed the cache just as the render before it finished finds it here.
		if v, ok := r.cache.get(k); ok {
			return v, nil
		}
		v, done := r.bounded(content, p.Language, p.Filename)
		if done {
			r.cache.add(k, v)
		}
		return v, nil
	})
	return v.(rendered)
}

// once renders content that is shown once and never again (a burned paste): bounded, not cached.
func (r *renderer) once(content []byte, language, filename string) rendered {
	v, _ := r.bounded(content, language, filename)
	return v
}

// bounded renders content in a render slot. A page that finds none within r.wait shows its
// content as plain text (done is false: that is not the paste's rendering, so it is not cached)
// rather than waiting behind renders without end.
func (r *renderer) bounded(content []byte, language, filename string) (v rendered, done bool) {
	if !r.takeSlot() {
		r.runs.WithLabelValues("busy").Inc()
		return renderPlain(content), false
	}
	defer func() { <-r.slots }()
	r.runs.WithLabelValues("done").Inc()
	return r.render(content, language, filename), true
}

func (r *renderer) takeSlot() bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
	}
	r.waiting.Inc()
	defer r.waiting.Dec()
	wait := time.NewTimer(r.wait)
	defer wait.Stop()
	select {
	case r.slots <- struct{}{}:
		return true
	case <-wait.C:
		return false
	}
}

// renderKey is what a page's rendering depends on: the paste, its bytes, and the language and file
// name its lexer is chosen by.
type renderKey struct{ code, hash, language, filename string }

func (k renderKey) String() string {
	return strconv.Quote(k.code) + " " + hex.EncodeToString([]byte(k.hash)) + " " + strconv.Quote(k.language) + " " + strconv.Quote(k.filename)
}

// entryOverhead is about what an entry costs besides its strings: the list element, the map slot.
const entryOverhead = 160

// cost is about the memory an entry takes.
func (k renderKey) cost(v rendered) int64 {
	return int64(len(k.code) + len(k.hash) + len(k.language) + len(k.filename) + len(v.HTML) + len(v.Language) + entryOverhead)
}

// renderCache holds renderings, the least recently used forgotten first once their sizes add up to
// more than max bytes.
type renderCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[renderKey, rendered]
	bytes int64
	max   int64
}

// newRenderCache returns a cache of at most maxBytes, or nil (a cache that holds nothing) for 0.
func newRenderCache(maxBytes int64) *renderCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &renderCache{max: maxBytes}
	// The count is bounded by the bytes: every entry costs at least entryOverhead.
	c.lru, _ = simplelru.NewLRU(int(max(1, maxBytes/entryOverhead)), func(k renderKey, v rendered) { c.bytes -= k.cost(v) })
	return c
}

func (c *renderCache) get(k renderKey) (rendered, bool) {
	if c == nil {
		return rendered{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(k)
}

// add keeps v unless it would take more than an eighth of the cache, so that one large paste
// cannot push out everything else.
func (c *renderCache) add(k renderKey, v rendered) {
	if c == nil {
		return
	}
	cost := k.cost(v)
	if cost > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(k) {
		return
	}
	c.lru.Add(k, v)
	c.bytes += cost
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}
