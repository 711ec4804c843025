package api_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pastebin/api"
	"pastebin/blob"
)

// BenchmarkCompressionCorpus measures compression at rest on source code nobody here wrote: every
// .go file of the Go distribution's src/ (`go env GOROOT`), one paste per file, stored on a server
// that stores content as it is (PASTEBIN_COMPRESSION=off: the service before compression) and on
// one that compresses, the two side by side, each paste created on both and read back from both in
// turns. It reports, after over before: S3 bytes stored, bytes on the wire for each kind of client
// (none, zstd, gzip in Accept-Encoding), and the mean create and read latency: a read's first,
// from S3, and its next ones, from Redis. -short takes every tenth file.
func BenchmarkCompressionCorpus(b *testing.B) {
	files := goCorpus(b)
	for b.Loop() {
		before := newEnv(b, withConfig(corpusConfig(true)))
		after := newEnv(b, withConfig(corpusConfig(false)))
		m := measureCorpus(b, files, before, after)
		m.report(b, before, after)
	}
}

func corpusConfig(uncompressed bool) func(*api.Config) {
	return func(c *api.Config) {
		c.Uncompressed = uncompressed
		c.MaxPasteBytes, c.CacheMaxBytes, c.DecodedCacheBytes = 10<<20, 256<<10, 32<<20 // serve's defaults
		c.DedupTiming = "off"                                                           // the corpus's few duplicates: nothing to hide here
		c.CreateRate, c.MaxConcurrentUploads = api.Rate{}, 0
	}
}

// goCorpus reads every non-empty .go file under GOROOT/src, every tenth with -short.
func goCorpus(b *testing.B) [][]byte {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	var files [][]byte
	i := 0
	err = filepath.WalkDir(filepath.Join(strings.TrimSpace(string(out)), "src"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		if i++; testing.Short() && i%10 != 0 {
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil && len(data) > 0 {
			files = append(files, data)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		b.Fatalf("corpus: %d files, %v", len(files), err)
	}
	return files
}

// codings are the clients measured, by what they send in Accept-Encoding ("identity": none taken).
var codings = []string{"identity", "zstd", "gzip"}

// corpusSide is what one server did with the corpus.
type corpusSide struct {
	create     time.Duration
	firstRead  time.Duration            // each paste's first read, from S3 (filling the cache)
	cachedRead map[string]time.Duration // by coding: the later reads, from Redis (from S3 past its size)
	reads      map[string]int
	wire       map[string]int64 // body bytes sent, by coding
}

type corpusMeasure struct {
	files         int
	before, after corpusSide
}

func measureCorpus(b *testing.B, files [][]byte, before, after *env) corpusMeasure {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}}
	m := corpusMeasure{files: len(files)}
	for _, s := range []*corpusSide{&m.before, &m.after} {
		s.cachedRead, s.reads, s.wire = map[string]time.Duration{}, map[string]int{}, map[string]int64{}
	}
	sides := []struct {
		e *env
		s *corpusSide
	}{{before, &m.before}, {after, &m.after}}
	for i, data := range files {
		first := i % 2 // turns: neither server always goes first
		codes := make([]string, 2)
		for k := range 2 {
			j := (first + k) % 2
			codes[j] = timedCreate(b, client, sides[j].e, data, sides[j].s)
		}
		for round, coding := range append(codings, codings...) { // the first round's first read fills the cache
			for k := range 2 {
				j := (first + k) % 2
				timedRead(b, client, sides[j].e, codes[j], coding, round == 0 && coding == "identity", sides[j].s)
			}
		}
	}
	return m
}

func timedCreate(b *testing.B, client *http.Client, e *env, data []byte, s *corpusSide) string {
	b.Helper()
	req := e.request(http.MethodPost, "/", strings.NewReader(string(data)))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.create += time.Since(start)
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	url, _, _ := strings.Cut(string(body), "\n")
	return url[strings.LastIndex(url, "/")+1:]
}

func timedRead(b *testing.B, client *http.Client, e *env, code, coding string, first bool, s *corpusSide) {
	b.Helper()
	req := e.request(http.MethodGet, "/raw/"+code, nil, "Accept-Encoding", coding)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("read: %d, %v", resp.StatusCode, err)
	}
	if first {
		s.firstRead += d
		return
	}
	s.cachedRead[coding] += d
	s.reads[coding]++
	s.wire[coding] += n
}

// storedBytes sums the sizes of the bucket's blobs.
func storedBytes(b *testing.B, bucket *blob.Bucket) int64 {
	b.Helper()
	var total int64
	err := bucket.List(context.Background(), blob.Prefix, func(objs []blob.Object) error {
		for _, o := range objs {
			total += o.Size
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}

func (m corpusMeasure) report(b *testing.B, before, after *env) {
	stored0, stored1 := storedBytes(b, before.bucket), storedBytes(b, after.bucket)
	b.ReportMetric(float64(m.files), "pastes")
	b.ReportMetric(float64(stored0)/(1<<20), "MiB-stored-before")
	b.ReportMetric(float64(stored1)/(1<<20), "MiB-stored-after")
	b.ReportMetric(float64(stored0)/float64(stored1), "x-fewer-bytes-stored")
	n := float64(m.files)
	b.ReportMetric(m.before.create.Seconds()*1e3/n, "create-ms-before")
	b.ReportMetric(m.after.create.Seconds()/m.before.create.Seconds(), "create-after/before")
	b.ReportMetric(m.before.firstRead.Seconds()*1e6/n, "read-S3-µs-before")
	b.ReportMetric(m.after.firstRead.Seconds()/m.before.firstRead.Seconds(), "read-S3-after/before")
	for _, c := range codings {
		b.ReportMetric(float64(m.before.wire[c])/float64(m.after.wire[c]), "x-fewer-wire-bytes-"+c)
		b.ReportMetric(m.before.cachedRead[c].Seconds()*1e6/float64(m.before.reads[c]), "read-µs-before-"+c)
		b.ReportMetric(m.after.cachedRead[c].Seconds()/m.before.cachedRead[c].Seconds(), "read-after/before-"+c)
	}
}
