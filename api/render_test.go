package api_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pastebin/api"
)

// denseScript is about n bytes of JavaScript with a token every few bytes, the costliest kind of
// paste for the highlighter (api/web/highlight.go's maxHighlightBytes).
func denseScript(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "const v%d=[%d,'s%d',{k:%d}].map(x=>x*2+\"q\"/3);if(v%d){f(v%d,/re%d/g)}\n", i, i, i, i, i, i, i)
	}
	return b.String()
}

// metricValue reads one series from the API's /metrics, 0 when it is not there.
func (e *env) metricValue(series string) float64 {
	e.t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(e.get("/metrics").text())
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// TestWebPageRenderedOnce: however many browsers view a page at once, and however often after,
// its paste is highlighted once.
func TestWebPageRenderedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create(denseScript(8<<10), "?language=javascript")
	const together, after = 8, 4
	var wg sync.WaitGroup
	for range together {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/"+p.code, nil)
			req.Header.Set("Accept", browserAccept)
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `<span class="kr">const</span>`) {
				t.Errorf("page: %d, highlighted: %v", resp.StatusCode, strings.Contains(string(body), `class="kr"`))
			}
		})
	}
	wg.Wait()
	for range after {
		if r := e.page("/" + p.code); r.StatusCode != http.StatusOK {
			t.Fatalf("page: %d", r.StatusCode)
		}
	}
	if n := e.metricValue(`pastebin_renders_total{result="done"}`); n != 1 {
		t.Errorf("%d views of one page, %d of them at once, rendered it %v times; want 1", together+after, together, n)
	}
	hits, misses := e.metricValue(`pastebin_render_cache_lookups_total{result="hit"}`), e.metricValue(`pastebin_render_cache_lookups_total{result="miss"}`)
	if hits < after || hits+misses != together+after {
		t.Errorf("render cache: %v hits and %v misses, want at least %d hits of %d lookups", hits, misses, after, together+after)
	}
}

// BenchmarkPageView measures one browser viewing the page of 30 KiB of dense JavaScript again and
// again, over loopback against real services, with the render cache and without it (every view
// highlights the paste again, as before the cache). Read the two against each other.
func BenchmarkPageView(b *testing.B) {
	for _, tt := range []struct {
		name  string
		bytes int64
	}{{"render cache", 32 << 20}, {"no render cache", 0}} {
		b.Run(tt.name, func(b *testing.B) {
			e := newEnv(b, withConfig(func(c *api.Config) { c.RenderCacheBytes = tt.bytes }))
			p := e.create(denseScript(30<<10), "?language=javascript")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/"+p.code, nil)
			req.Header.Set("Accept", browserAccept)
			for b.Loop() {
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("page: %d", resp.StatusCode)
				}
			}
		})
	}
}
