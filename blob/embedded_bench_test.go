package blob_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"pastebin/blob"
	"pastebin/blob/blobtest"
)

// BenchmarkEmbeddedPut puts 1 KiB objects into the embedded S3 server from 32 clients at once, as
// 32 connections creating pastes of new content do: through its endpoint, as other processes do,
// and in process, as serve does.
func BenchmarkEmbeddedPut(b *testing.B) {
	b.Run("endpoint", func(b *testing.B) {
		bucket, _ := blobtest.Embedded(b)
		benchPuts(b, bucket)
	})
	b.Run("in process", func(b *testing.B) { benchPuts(b, blobtest.InProcess(b)) })
}

func benchPuts(b *testing.B, bucket *blob.Bucket) {
	run := rand.Text() // -count repeats this benchmark on one store: each run needs keys of its own
	data := make([]byte, 1024)
	var n atomic.Int64
	b.SetParallelism(32 / max(1, runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", run, n.Add(1)))
			key, err := blob.NewKey(h[:])
			if err == nil {
				err = bucket.Put(context.Background(), key, data)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}
