package paste

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/cache"
	"pastebin/store"
)

// SpamThreshold is when a content is hot: Clients distinct clients created it within Window.
type SpamThreshold struct {
	Clients int
	Window  time.Duration
}

// On reports whether t asks for a spam signal at all.
func (t SpamThreshold) On() bool { return t.Clients > 0 && t.Window > 0 }

// recordTimeout bounds what counting a create may add to it while Redis is slow.
const recordTimeout = 250 * time.Millisecond

// Spam is the spam signal (docs/design.md, "Spam signal"): the same content created by many
// distinct clients in a short time. Each create that committed counts its client (Record), across
// every replica; the hottest contents are listed with what the database holds of them (Hottest),
// for an operator to block with one click; and how many are hot now is the metric
// pastebin_content_hot. A nil *Spam is the signal turned off.
type Spam struct {
	hot       *cache.HotContent
	store     *store.Store
	threshold SpamThreshold
	logger    *slog.Logger
	scrapes   cache.Outage // Redis failing the metric's reads, logged once per outage
}

// NewSpam returns the spam signal of threshold over c and s, its metrics registered in reg; nil
// when threshold is off.
func NewSpam(c *cache.Cache, s *store.Store, threshold SpamThreshold, reg prometheus.Registerer, logger *slog.Logger) *Spam {
	if !threshold.On() {
		return nil
	}
	sp := &Spam{hot: c.NewHotContent(threshold.Window), store: s, threshold: threshold, logger: logger}
	reg.MustRegister(spamCollector{sp})
	return sp
}

// Threshold is when a content is hot; the zero SpamThreshold when the signal is off.
func (sp *Spam) Threshold() SpamThreshold {
	if sp == nil {
		return SpamThreshold{}
	}
	return sp.threshold
}

// Record counts client as a creator of the content hash, after its create committed: a create of
// stored content counts as much as the first, that is the point. It never fails the create: with
// Redis slow or away the create goes on uncounted (HotContent says so in the log, once).
func (sp *Spam) Record(ctx context.Context, hash []byte, client string) {
	if sp == nil || client == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	_, _ = sp.hot.Add(ctx, hash, client)
}

// HotContent is a content of the ranking: how many distinct clients created it in the window, and
// what the database holds of it.
type HotContent struct {
	store.ContentRefs
	Clients int
	Hot     bool // Clients is at the threshold or past it
}

// hotCodes is how many of each hot content's pastes Hottest names.
const hotCodes = 5

// Hottest lists the n contents created by the most distinct clients in the window, the most first,
// each with its ref count, whether it is blocked, and a few of its live pastes: the ranking from
// Redis, then one statement for all of them.
func (sp *Spam) Hottest(ctx context.Context, n int) ([]HotContent, error) {
	if sp == nil {
		return nil, nil
	}
	top, err := sp.hot.Top(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSignalUnavailable, err)
	}
	if len(top) == 0 {
		return nil, nil
	}
	hashes := make([][]byte, len(top))
	for i, h := range top {
		hashes[i] = h.Hash
	}
	refs, err := sp.store.ContentRefs(ctx, hashes, hotCodes)
	if err != nil {
		return nil, err
	}
	list := make([]HotContent, len(top))
	for i, h := range top {
		list[i] = HotContent{ContentRefs: refs[i], Clients: h.Clients, Hot: h.Clients >= sp.threshold.Clients}
	}
	return list, nil
}

// spamCollector reads the signal when Prometheus scrapes: a gauge whose value is a count, not one
// series per content (content hashes would be labels without bound). Every replica reports the
// same shared count; the alert takes their max.
type spamCollector struct{ sp *Spam }

var (
	hotDesc = prometheus.NewDesc("pastebin_content_hot",
		"Contents created by at least the spam threshold's distinct clients within its window, and not blocked.", nil, nil)
	hotMaxDesc = prometheus.NewDesc("pastebin_content_hot_clients_max",
		"Distinct clients that created the hottest content not blocked, within the spam threshold's window.", nil, nil)
	thresholdDesc = prometheus.NewDesc("pastebin_content_hot_threshold",
		"Distinct clients within the window from which a content is hot (PASTEBIN_SPAM_THRESHOLD).", nil, nil)
)

// scrapeContents is how many of the hottest contents a scrape reads.
const scrapeContents = 100

func (c spamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- hotDesc
	ch <- hotMaxDesc
	ch <- thresholdDesc
}

// Collect reports the threshold always, and the hot contents when Redis and PostgreSQL answered:
// a series missing says unknown, where a 0 would say all is quiet.
func (c spamCollector) Collect(ch chan<- prometheus.Metric) {
	sp := c.sp
	ch <- prometheus.MustNewConstMetric(thresholdDesc, prometheus.GaugeValue, float64(sp.threshold.Clients))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	list, err := sp.Hottest(ctx, scrapeContents)
	if err != nil {
		if sp.scrapes.Failed() {
			sp.logger.Warn("spam signal unreadable: pastebin_content_hot not reported", "err", err)
		}
		return
	}
	if sp.scrapes.Succeeded() {
		sp.logger.Info("spam signal readable again")
	}
	hot, hottest := 0, 0
	for _, h := range list {
		if h.Blocked {
			continue // its creates are refused already: nothing left to act on
		}
		hottest = max(hottest, h.Clients)
		if h.Hot {
			hot++
		}
	}
	ch <- prometheus.MustNewConstMetric(hotDesc, prometheus.GaugeValue, float64(hot))
	ch <- prometheus.MustNewConstMetric(hotMaxDesc, prometheus.GaugeValue, float64(hottest))
}
