package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"pastebin/cache"
	"pastebin/expiry"
	"pastebin/store"
	"pastebin/tools/internal/benchdata"
)

// result is one strategy's measurements: pastes cleaned and the time it took, per repetition.
type result struct {
	name      string
	rates     []float64 // pastes per second
	deadlocks int64     // deadlocks PostgreSQL detected in the strategy's databases, all runs together
	note      string
}

func (r result) median() float64 {
	s := slices.Clone(r.rates)
	slices.Sort(s)
	return s[len(s)/2]
}

// measureAll measures every strategy cfg.repeat times, interleaved so that slow phases of the
// shared machine spread over all of them.
func (b *bench) measureAll(ctx context.Context) ([]result, error) {
	results := []result{{name: "floor: set-based, one transaction, no S3/Redis"}}
	for _, w := range b.cfg.workers {
		results = append(results, result{name: fmt.Sprintf("subsystem, %d worker(s), batch %d", w, b.cfg.batchSize)})
	}
	results = append(results, result{name: "naive: a transaction, an S3 delete, a Redis DEL per paste",
		note: fmt.Sprintf("sample of %d, extrapolated", b.cfg.sample)})
	for rep := 1; rep <= b.cfg.repeat; rep++ {
		for i := range results {
			if !b.selected(i) {
				continue
			}
			db := fmt.Sprintf("pb_bench_run_%d", i)
			if err := b.restore(ctx, db); err != nil {
				return nil, err
			}
			rate, err := b.measure(ctx, i, db)
			b.dirty = b.dirty || i > 0 // the floor touches neither S3 nor Redis
			if err != nil {
				return nil, fmt.Errorf("%s: %w", results[i].name, err)
			}
			results[i].rates = append(results[i].rates, rate)
			deadlocks, err := b.dbs.Deadlocks(ctx, db)
			if err != nil {
				return nil, err
			}
			results[i].deadlocks += deadlocks
			b.logf("round %d/%d  %-60s %9.0f pastes/s, %d deadlocks", rep, b.cfg.repeat, results[i].name, rate, deadlocks)
			if err := b.dbs.Drop(ctx, db); err != nil {
				return nil, err
			}
		}
	}
	var measured []result
	for _, r := range results {
		if len(r.rates) > 0 {
			measured = append(measured, r)
		}
	}
	return measured, nil
}

// selected reports whether strategy i is measured in this run (-only).
func (b *bench) selected(i int) bool {
	kind := "subsystem"
	if i == 0 {
		kind = "floor"
	} else if i > len(b.cfg.workers) {
		kind = "naive"
	}
	return b.cfg.only == "" || b.cfg.only == kind
}

// measure runs strategy i (floor, the subsystem per worker count, then naive) on database db.
func (b *bench) measure(ctx context.Context, i int, db string) (float64, error) {
	st, err := store.Open(ctx, b.dbs.URL(db), b.logger)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	switch {
	case i == 0:
		return b.floor(ctx, st)
	case i <= len(b.cfg.workers):
		return b.subsystem(ctx, st, b.cfg.workers[i-1])
	default:
		return b.naive(ctx, st)
	}
}

// subsystem runs the expiry subsystem end to end and checks that it left everything consistent.
func (b *bench) subsystem(ctx context.Context, st *store.Store, workers int) (float64, error) {
	bucket, err := b.openBucket(ctx)
	if err != nil {
		return 0, err
	}
	c, err := cache.OpenURL(b.cfg.services.RedisURL, cache.ClientOptions{}, "pb:", b.logger)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	cfg := expiry.DefaultConfig()
	cfg.Workers, cfg.BatchSize, cfg.SweepSchedule = workers, b.cfg.batchSize, ""
	cfg.Pacing.Mode = expiry.PacingOff // the subsystem's own speed: nobody else is on the database
	reg := prometheus.NewRegistry()
	locks := expiry.Locks{Claim: c.NewLock("claim", 5*time.Second, 10*time.Second), Sweep: c.NewLease("sweep", time.Minute)}
	x, err := expiry.New(cfg, st, bucket, c, locks, b.logger, reg)
	if err != nil {
		return 0, err
	}
	if b.cfg.statements {
		_ = benchdata.ResetStatements(ctx, st.Pool())
	}
	start := time.Now()
	r, err := x.RunOnce(ctx, "cli")
	elapsed := time.Since(start)
	if b.cfg.statements {
		b.printStatements(ctx, st)
	}
	if err != nil {
		return 0, err
	}
	b.logf("           %d batches; mean claim %s, mean finishing transaction %s", r.Batches,
		meanLatency(reg, "pastebin_cleanup_claim_seconds"), meanLatency(reg, "pastebin_cleanup_finish_seconds"))
	if r.Tombstoned != int64(b.cfg.expired) || r.Errors != 0 {
		return 0, fmt.Errorf("run cleaned %d of %d pastes with %d errors: %s", r.Tombstoned, b.cfg.expired, r.Errors, r.LastError)
	}
	return float64(r.Tombstoned) / elapsed.Seconds(), benchdata.Verify(ctx, st.Pool(), true)
}

// floor is the set-based floor (benchdata.Floor): the fastest the database itself could clean.
func (b *bench) floor(ctx context.Context, st *store.Store) (float64, error) {
	n, elapsed, err := benchdata.Floor(ctx, st.Pool())
	if err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), benchdata.Verify(ctx, st.Pool(), false)
}

// naive cleans a sample row by row, as the cleanup seed warns against: per paste one transaction,
// one S3 delete of the freed blob, one Redis DEL.
func (b *bench) naive(ctx context.Context, st *store.Store) (float64, error) {
	bucket, err := b.openBucket(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	rows, err := st.Pool().Query(ctx, `SELECT short_code FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now()
		ORDER BY expires_at LIMIT $1`, b.cfg.sample)
	if err != nil {
		return 0, err
	}
	codes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	for _, code := range codes {
		key, err := naiveDelete(ctx, st, code)
		if err != nil {
			return 0, err
		}
		if key != "" {
			if _, err := bucket.Delete(ctx, []string{key}); err != nil {
				return 0, err
			}
		}
		if err := b.rdb.Del(ctx, "pb:paste:"+code).Err(); err != nil {
			return 0, err
		}
	}
	return float64(len(codes)) / time.Since(start).Seconds(), nil
}

// naiveDelete is one paste's transaction: tombstone, decrement, delete the content at zero.
func naiveDelete(ctx context.Context, st *store.Store, code string) (string, error) {
	var freedKey string
	err := pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
		var hash []byte
		err := tx.QueryRow(ctx, `SELECT content_hash FROM pastes WHERE short_code = $1 AND status = 'NOT_EXPIRED' FOR UPDATE`, code).Scan(&hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE pastes SET status = 'DELETED', content_hash = NULL, deleted_at = now(), deleted_reason = 'expired'
			WHERE short_code = $1`, code); err != nil {
			return err
		}
		var refs int64
		var key string
		if err := tx.QueryRow(ctx, `UPDATE content SET ref_count = ref_count - 1 WHERE content_hash = $1 RETURNING ref_count, blob_key`,
			hash).Scan(&refs, &key); err != nil {
			return err
		}
		if refs == 0 {
			freedKey = key
			_, err = tx.Exec(ctx, `DELETE FROM content WHERE content_hash = $1`, hash)
		}
		return err
	})
	return freedKey, err
}

// meanLatency reads the mean of a histogram the expiry subsystem recorded.
func meanLatency(reg *prometheus.Registry, name string) time.Duration {
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			h := f.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() > 0 {
				return time.Duration(h.GetSampleSum() / float64(h.GetSampleCount()) * float64(time.Second)).Round(100 * time.Microsecond)
			}
		}
	}
	return 0
}

// printStatements prints the statements that took the most time in the database since the reset.
func (b *bench) printStatements(ctx context.Context, st *store.Store) {
	stmts, err := benchdata.TopStatements(ctx, st.Pool(), 8)
	if err != nil {
		b.logf("           pg_stat_statements: %v", err)
		return
	}
	for _, s := range stmts {
		b.logf("           %6d calls %7.0f ms total %8.2f ms mean  %s", s.Calls, s.TotalMs, s.Mean, s.Query)
	}
}
