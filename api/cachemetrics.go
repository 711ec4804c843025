package api

import (
	"github.com/prometheus/client_golang/prometheus"

	"pastebin/cache"
)

// cacheLookups counts the reads' cache lookups by result, for the cache hit ratio: hit (served
// from Redis), gone (a deleted or expired paste's marker), miss (PostgreSQL asked, Redis down
// included).
type cacheLookups struct{ byResult *prometheus.CounterVec }

func newCacheLookups(reg prometheus.Registerer) cacheLookups {
	c := cacheLookups{byResult: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pastebin_cache_lookups_total", Help: "Paste reads' cache lookups by result: hit, gone, miss.",
	}, []string{"result"})}
	for _, r := range []string{"hit", "gone", "miss"} {
		c.byResult.WithLabelValues(r) // every series from the start, so rates and ratios never lack one
	}
	reg.MustRegister(c.byResult)
	return c
}

func (c cacheLookups) record(res cache.Result) {
	switch res {
	case cache.Hit:
		c.byResult.WithLabelValues("hit").Inc()
	case cache.Gone:
		c.byResult.WithLabelValues("gone").Inc()
	default:
		c.byResult.WithLabelValues("miss").Inc()
	}
}
