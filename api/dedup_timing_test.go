package api_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"pastebin/api"
	"pastebin/blob"
	"pastebin/blob/blobtest"
	"pastebin/paste"
	"pastebin/store/storetest"
)

// slowBucket is a bucket of its own on the test S3 server behind a proxy that holds every chunk of
// bytes delay in each direction: every upload takes at least twice delay.
func slowBucket(t *testing.T, delay time.Duration) *blob.Bucket {
	t.Helper()
	cfg := blobtest.Config(t)
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := blobtest.NewProxy(t, u.Host)
	cfg.Endpoint = "http://" + proxy.Addr()
	b := blobtest.Open(t, cfg)
	proxy.Delay(delay)
	return b
}

// timedCreate creates a paste of content and says how long its answer took.
func (e *env) timedCreate(content string) time.Duration {
	e.t.Helper()
	start := time.Now()
	e.create(content, "")
	return time.Since(start)
}

// A create of content already stored does not answer sooner than an upload would have: no earlier
// than the uploads this process timed, which through a slow S3 all took at least twice its delay
// (less the quarter a wait may aim early by, paste/dedup.go). Lower bounds only: a slow machine makes
// the answers later, never earlier.
func TestCreateOfStoredContentAnswersAsLateAsAnUpload(t *testing.T) {
	t.Parallel()
	const delay = 50 * time.Millisecond
	e := newEnv(t, withBucket(slowBucket(t, delay)))
	stored := []string{"stored first", "stored second", "stored third"}
	for _, s := range stored {
		if took := e.timedCreate(s); took < 2*delay {
			t.Fatalf("an upload answered in %v, before the proxy's %v", took, 2*delay)
		}
	}
	for _, s := range stored {
		if took := e.timedCreate(s); took < 3*delay/2 {
			t.Errorf("a create of stored content answered in %v; an upload takes at least %v", took, 2*delay)
		}
	}
	// The fast path stayed fast for the store: no second upload of any of them.
	audit := storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket))
	if len(audit.Outbox) != 0 || len(blobtest.Keys(t, e.bucket)) != len(stored) {
		t.Errorf("bucket %v, outbox %v: want one object per content, nothing to delete", blobtest.Keys(t, e.bucket), audit.Outbox)
	}
	audit.Consistent(t)
}

// A process that has timed no upload of a size yet has nothing to wait as: it uploads stored
// content of that size again, and the create's transaction queues the duplicate for deletion.
func TestCreateOfStoredContentUploadsWhereNoUploadWasTimed(t *testing.T) {
	t.Parallel()
	const delay = 50 * time.Millisecond
	e := newEnv(t, withBucket(slowBucket(t, delay)))
	e.create("stored by the first replica", "")
	other := e.replica() // a process of its own, which has timed nothing
	if took := other.timedCreate("stored by the first replica"); took < 2*delay {
		t.Errorf("the other replica's create of stored content answered in %v; an upload takes at least %v", took, 2*delay)
	}
	checkDuplicateUploaded(t, e, "stored by the first replica")
}

func TestDedupTimingOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) { c.DedupTiming = paste.DedupOff }))
	e.create("uploaded once", "")
	e.create("uploaded once", "")
	if keys := blobtest.Keys(t, e.bucket); len(keys) != 1 || e.refCount("uploaded once") != 2 {
		t.Errorf("bucket %v, ref_count %d: want one object held twice", keys, e.refCount("uploaded once"))
	}
}

// checkDuplicateUploaded checks that content was uploaded twice and stored once: two references to
// one content row, and the second object queued for deletion.
func checkDuplicateUploaded(t *testing.T, e *env, content string) {
	t.Helper()
	audit := storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket))
	if n := e.refCount(content); n != 2 || len(audit.Outbox) != 1 || len(blobtest.Keys(t, e.bucket)) != 2 {
		t.Errorf("ref_count %d, outbox %v, bucket %v: want 2, the duplicate, both objects", n, audit.Outbox, blobtest.Keys(t, e.bucket))
	}
	audit.Consistent(t)
}

// BenchmarkDedupTiming measures whether the time a create takes tells a create of stored content from
// one of new content, as a client probing for someone else's bytes would: creates of new content
// and first creates (by this client) of stored content, all of one size, in random order, against
// the test S3 server (versitygw under make bench), once with each DedupTiming. A warm-up of the
// same mix, not counted, comes first, as on a server with traffic: the latest uploads a wait draws
// from are then of the same kind of moment as the creates measured. It reports the two-sample
// Kolmogorov-Smirnov statistic D of the two kinds' answer times and its p-value (the chance of a D
// this large if both came from one distribution), and each kind's median; the log has quantiles.
func BenchmarkDedupTiming(b *testing.B) {
	const warmUp, n = 256, 300 // creates of each kind
	for _, mode := range []paste.DedupTiming{paste.DedupPad, paste.DedupOff} {
		b.Run(string(mode), func(b *testing.B) {
			e := newEnv(b, withConfig(func(c *api.Config) { c.DedupTiming = mode }))
			for b.Loop() {
				run := fmt.Sprint(rand.Int64()) // each iteration's contents are its own
				content := func(kind string, i int) string { return fmt.Sprintf("%-1000s", run+kind+fmt.Sprint(i)) }
				for i := range warmUp + n {
					e.create(content("stored", i), "") // someone else's, stored before
				}
				probes := map[bool]int{}
				probe := func(stored bool) time.Duration {
					probes[stored]++
					return e.timedCreate(content(map[bool]string{true: "stored", false: "new"}[stored], probes[stored]-1))
				}
				for _, stored := range shuffledKinds(warmUp) {
					probe(stored)
				}
				times := map[bool][]float64{}
				for _, stored := range shuffledKinds(n) {
					times[stored] = append(times[stored], probe(stored).Seconds())
				}
				for _, stored := range []bool{true, false} {
					b.Logf("stored %-5v ms: %s", stored, quantiles(times[stored]))
				}
				d := ksStatistic(times[true], times[false])
				b.ReportMetric(d, "D")
				b.ReportMetric(ksPValue(d, n, n), "p")
				b.ReportMetric(1000*median(times[true]), "ms-stored")
				b.ReportMetric(1000*median(times[false]), "ms-new")
			}
		})
	}
}

// shuffledKinds is n trues and n falses in random order.
func shuffledKinds(n int) []bool {
	kinds := make([]bool, 2*n)
	for i := range n {
		kinds[i] = true
	}
	rand.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	return kinds
}

// ksStatistic is the two-sample Kolmogorov-Smirnov statistic: the largest distance between the
// empirical distribution functions of a and b.
func ksStatistic(a, b []float64) float64 {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	var d float64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}

// ksPValue is the asymptotic p-value of a two-sample statistic d over samples of n and m
// (Kolmogorov's distribution, with Stephens' correction for finite samples).
func ksPValue(d float64, n, m int) float64 {
	ne := math.Sqrt(float64(n*m) / float64(n+m))
	lambda := (ne + 0.12 + 0.11/ne) * d
	if lambda < 0.3 {
		return 1
	}
	var p float64
	for k := 1; k <= 100; k++ {
		p += 2 * math.Pow(-1, float64(k-1)) * math.Exp(-2*float64(k*k)*lambda*lambda)
	}
	return min(max(p, 0), 1)
}

// quantiles are the 5th, 25th, 50th, 75th and 95th percentiles of times in seconds, in milliseconds.
func quantiles(times []float64) string {
	s := slices.Sorted(slices.Values(times))
	var out []string
	for _, q := range []float64{.05, .25, .5, .75, .95} {
		out = append(out, fmt.Sprintf("p%02.0f %.2f", 100*q, 1000*s[int(q*float64(len(s)))]))
	}
	return strings.Join(out, ", ")
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func TestKolmogorovSmirnov(t *testing.T) {
	t.Parallel()
	same := []float64{1, 2, 3, 4, 5}
	if d := ksStatistic(same, same); d != 0 {
		t.Errorf("D of a sample with itself: %v, want 0", d)
	}
	if d := ksStatistic([]float64{1, 2, 3}, []float64{4, 5, 6}); d != 1 {
		t.Errorf("D of disjoint samples: %v, want 1", d)
	}
	if d := ksStatistic([]float64{1, 2, 3, 4}, []float64{3, 4, 5, 6}); d != 0.5 {
		t.Errorf("D of half-overlapping samples: %v, want 0.5", d)
	}
	// Critical values of the two-sample test at n = m = 300: 1.36 and 1.63 times sqrt(2/300).
	for _, tt := range []struct{ d, p float64 }{{1.36 * math.Sqrt(2.0/300), 0.05}, {1.63 * math.Sqrt(2.0/300), 0.01}} {
		if p := ksPValue(tt.d, 300, 300); math.Abs(p-tt.p) > tt.p/5 {
			t.Errorf("p-value of D=%.4f: %.4f, want about %v", tt.d, p, tt.p)
		}
	}
}
