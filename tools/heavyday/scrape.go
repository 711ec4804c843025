package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// histogram is a Prometheus histogram as scraped: cumulative counts per upper bound.
type histogram struct {
	bounds []float64 // upper bounds, ascending; +Inf is count
	cum    []float64
	count  float64
	sum    float64
}

func histogramOf(h *dto.Histogram) histogram {
	out := histogram{count: float64(h.GetSampleCount()), sum: h.GetSampleSum()}
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.cum = append(out.cum, float64(b.GetCumulativeCount()))
	}
	return out
}

// plus adds two replicas' histograms of the same metric.
func (h histogram) plus(o histogram) histogram {
	if len(h.bounds) == 0 {
		return o
	}
	out := histogram{bounds: h.bounds, cum: make([]float64, len(h.cum)), count: h.count + o.count, sum: h.sum + o.sum}
	for i := range h.cum {
		out.cum[i] = h.cum[i] + o.cum[i]
	}
	return out
}

// minus is what was observed between an earlier scrape o and h.
func (h histogram) minus(o histogram) histogram {
	if len(o.bounds) == 0 {
		return h
	}
	out := histogram{bounds: h.bounds, cum: make([]float64, len(h.cum)), count: h.count - o.count, sum: h.sum - o.sum}
	for i := range h.cum {
		out.cum[i] = h.cum[i] - o.cum[i]
	}
	return out
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile does: linearly within the
// bucket it falls in. NaN when nothing was observed.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, upper := range h.bounds {
		if h.cum[i] >= rank {
			return lower + (upper-lower)*(rank-below)/(h.cum[i]-below)
		}
		lower, below = upper, h.cum[i]
	}
	return lower // past the last bound: the best the buckets can say
}

func (h histogram) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// sample is the cleanup's state over every replica at one moment, from their /metrics.
type sample struct {
	at                       time.Time
	tombstoned, blobsDeleted float64
	claim, finish, s3        histogram
	rateLimit                float64 // pastes/s the deployment's drain may claim (every replica says the same); 0: none
	signal                   float64 // the automatic pacing's signal, a ratio to its level before the drain
	aim                      float64 // where the pacing holds its signal
	cuts                     float64 // times the automatic pacing cut the rate
}

// scrape reads every replica's /metrics and adds them up.
func scrape(ctx context.Context, rs []*replica) (sample, error) {
	s := sample{at: time.Now()}
	for _, r := range rs {
		fams, err := r.metrics(ctx)
		if err != nil {
			return s, err
		}
		value := func(name string) float64 {
			f := fams[name]
			if f == nil || len(f.GetMetric()) == 0 {
				return 0
			}
			m := f.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		hist := func(name string) histogram {
			if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
				return histogramOf(f.GetMetric()[0].GetHistogram())
			}
			return histogram{}
		}
		s.tombstoned += value("pastebin_cleanup_tombstoned_total")
		s.blobsDeleted += value("pastebin_cleanup_blobs_deleted_total")
		s.claim = s.claim.plus(hist("pastebin_cleanup_claim_seconds"))
		s.finish = s.finish.plus(hist("pastebin_cleanup_finish_seconds"))
		s.s3 = s.s3.plus(hist("pastebin_cleanup_blob_delete_seconds"))
		s.rateLimit = max(s.rateLimit, value("pastebin_cleanup_rate_limit"))
		s.signal = max(s.signal, value("pastebin_cleanup_pacing_signal_ratio"))
		s.aim = max(s.aim, value("pastebin_cleanup_pacing_aim_ratio"))
		if f := fams["pastebin_cleanup_paced_total"]; f != nil {
			for _, m := range f.GetMetric() {
				s.cuts += m.GetCounter().GetValue()
			}
		}
	}
	return s, nil
}

func (r *replica) metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: /metrics answered %s", r.name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}
