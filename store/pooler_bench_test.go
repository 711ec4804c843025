package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// BenchmarkPooler is what pgbouncer in transaction mode costs a create (new content: one transaction
// of two inserts) and the database part of an uncached read (one query), against direct
// connections to the same database. Three ways in, measured in turn within each iteration so that
// the load of a shared machine falls on all three alike: direct with pgx's statement cache (the
// default), direct in exec mode (no statement kept: what the pooler makes the service use), and
// through pgbouncer in exec mode. It reports each one's time per operation and the ratios to direct.
func BenchmarkPooler(b *testing.B) {
	direct := storetest.NewDirectDatabase(b)
	pooled := storetest.Pooled(b, direct)
	exec := withQuery(b, direct, "default_query_exec_mode", "exec")
	logger := slog.New(slog.DiscardHandler)
	ways := []struct {
		name string
		s    *store.Store
	}{{"direct", open(b, direct, logger)}, {"direct-exec", open(b, exec, logger)}, {"pgbouncer", open(b, pooled, logger)}}
	ctx := context.Background()
	code := make([]string, len(ways))
	for i, w := range ways {
		code[i] = create(b, w.s, fmt.Sprintf("read by %s", w.name))
	}
	ops := []struct {
		name string
		do   func(s *store.Store, way, i int)
	}{
		{"create", func(s *store.Store, way, i int) { create(b, s, fmt.Sprintf("%d %d %d", time.Now().UnixNano(), way, i)) }},
		{"uncached read", func(s *store.Store, way, _ int) {
			if _, err := s.Paste(ctx, code[way]); err != nil {
				b.Fatal(err)
			}
		}},
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			spent := make([]time.Duration, len(ways))
			n := 0
			for b.Loop() {
				for way, w := range ways {
					start := time.Now()
					op.do(w.s, way, n)
					spent[way] += time.Since(start)
				}
				n++
			}
			for way, w := range ways {
				b.ReportMetric(float64(spent[way].Microseconds())/float64(n), "µs/"+w.name)
				if way > 0 {
					b.ReportMetric(float64(spent[way])/float64(spent[0]), w.name+"/direct")
				}
			}
		})
	}
}

func open(b *testing.B, dbURL string, logger *slog.Logger) *store.Store {
	s, err := store.Open(context.Background(), dbURL, logger)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

func create(b *testing.B, s *store.Store, content string) string {
	h := sha256.Sum256([]byte(content))
	p, err := s.CreatePasteWithBlob(context.Background(), store.NewPaste{ContentHash: h[:], Size: int64(len(content)),
		OwnerTokenHash: store.HashToken("t"), ExpiresAt: time.Now().Add(time.Hour)}, fmt.Sprintf("blobs/%x/bench", h))
	if err != nil {
		b.Fatal(err)
	}
	return p.Code
}

func withQuery(b *testing.B, dbURL, key, value string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
