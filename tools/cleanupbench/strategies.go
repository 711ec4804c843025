package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"pastebin/cache"
	"pastebin/expiry"
	"pastebin/store"
	"pastebin/tools/internal/benchdata"
)

// result is one strategy's measurements, per repetition.
type result struct {
	name      string
	rates     []float64 // pastes per second
	wal       []float64 // bytes of WAL per cleaned paste
	cpu       []float64 // PostgreSQL's processor time per cleaned paste, µs
	deadlocks int64     // deadlocks PostgreSQL detected in the strategy's databases, all runs together
	note      string
}

// measurement is what one repetition of a strategy measured.
type measurement struct {
	pastes  int64
	seconds float64
	wal     int64   // bytes of WAL written meanwhile, by the whole server
	cpu     float64 // PostgreSQL's processor seconds meanwhile, every process of the server
}

func (r result) median() float64 { return median(r.rates) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
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
			m, err := b.measure(ctx, i, db)
			b.dirty = b.dirty || i > 0 // the floor touches neither S3 nor Redis
			if err != nil {
				return nil, fmt.Errorf("%s: %w", results[i].name, err)
			}
			rate := float64(m.pastes) / m.seconds
			results[i].rates = append(results[i].rates, rate)
			if m.cpu > 0 {
				results[i].wal = append(results[i].wal, float64(m.wal)/float64(m.pastes))
				results[i].cpu = append(results[i].cpu, m.cpu/float64(m.pastes)*1e6)
			}
			deadlocks, err := b.dbs.Deadlocks(ctx, db)
			if err != nil {
				return nil, err
			}
			results[i].deadlocks += deadlocks
			b.logf("round %d/%d  %-60s %9.0f pastes/s, %5.0f B of WAL and %4.0f µs of PostgreSQL a paste, %d deadlocks (load %s)",
				rep, b.cfg.repeat, results[i].name, rate, float64(m.wal)/float64(m.pastes), m.cpu/float64(m.pastes)*1e6, deadlocks, loadAverage())
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
	return len(b.cfg.only) == 0 || slices.Contains(b.cfg.only, kind)
}

// measure runs strategy i (floor, the subsystem per worker count, then naive) on database db, with
// the WAL it wrote and PostgreSQL's processor time (every process of the server, autovacuum and
// the checkpointer included) from start to end.
func (b *bench) measure(ctx context.Context, i int, db string) (measurement, error) {
	st, err := store.Open(ctx, b.dbs.URL(db), b.logger)
	if err != nil {
		return measurement{}, err
	}
	defer st.Close()
	pg, err := benchdata.PostgresPart(ctx, b.dbs.Admin(), "PostgreSQL")
	if err != nil {
		return measurement{}, err
	}
	walBefore, err := b.walPosition(ctx)
	if err != nil {
		return measurement{}, err
	}
	cpuBefore := benchdata.TakeCPU([]benchdata.CPUPart{pg})
	var m measurement
	switch {
	case i == 0:
		m, err = b.floor(ctx, st)
	case i <= len(b.cfg.workers):
		m, err = b.subsystem(ctx, st, b.cfg.workers[i-1])
	default:
		m, err = b.naive(ctx, st)
	}
	use := benchdata.TakeCPU([]benchdata.CPUPart{pg}).Since(cpuBefore)
	m.cpu = use.Cores[pg.Name] * use.Seconds
	walAfter, werr := b.walPosition(ctx)
	m.wal = walAfter - walBefore
	if b.cfg.walRecords && err == nil && werr == nil {
		b.printWALRecords(ctx, walBefore, walAfter, m.pastes)
	}
	return m, cmp.Or(err, werr)
}

// walPosition is how many bytes of WAL the server has written so far.
func (b *bench) walPosition(ctx context.Context) (int64, error) {
	var n int64
	err := b.dbs.Admin().QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n)
	return n, err
}

// printWALRecords prints the WAL written between two positions by kind of record, per cleaned
// paste: the records themselves and their full-page images apart.
func (b *bench) printWALRecords(ctx context.Context, from, to, pastes int64) {
	if _, err := b.dbs.Admin().Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`); err != nil {
		b.logf("           pg_walinspect: %v", err)
		return
	}
	// pg_walinspect reads only what is flushed: the last commits may still be on their way.
	var flushed int64
	for range 100 {
		err := b.dbs.Admin().QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::bigint`).Scan(&flushed)
		if err != nil || flushed >= to {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	to = min(to, flushed)
	rows, err := b.dbs.Admin().Query(ctx, `
		SELECT "resource_manager/record_type", count, record_size, fpi_size
		FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true)
		WHERE record_size + fpi_size > 0 ORDER BY record_size + fpi_size DESC LIMIT 12`,
		fmt.Sprintf("%X/%X", from>>32, uint32(from)), fmt.Sprintf("%X/%X", to>>32, uint32(to)))
	if err != nil {
		b.logf("           pg_walinspect: %v", err)
		return
	}
	var kind string
	var n, rec, fpi int64
	_, err = pgx.ForEachRow(rows, []any{&kind, &n, &rec, &fpi}, func() error {
		b.logf("           WAL %-28s %6.2f records %6.0f B + %6.0f B of page images a paste", kind,
			float64(n)/float64(pastes), float64(rec)/float64(pastes), float64(fpi)/float64(pastes))
		return nil
	})
	if err != nil {
		b.logf("           pg_walinspect: %v", err)
	}
}

// subsystem runs the expiry subsystem end to end and checks that it left everything consistent.
func (b *bench) subsystem(ctx context.Context, st *store.Store, workers int) (measurement, error) {
	bucket, err := b.openBucket(ctx)
	if err != nil {
		return measurement{}, err
	}
	c, err := cache.OpenURL(b.cfg.services.RedisURL, cache.ClientOptions{}, "pb:", b.logger)
	if err != nil {
		return measurement{}, err
	}
	defer c.Close()
	cfg := expiry.DefaultConfig()
	cfg.Workers, cfg.BatchSize, cfg.SweepSchedule = workers, b.cfg.batchSize, ""
	cfg.Pacing.Mode = expiry.PacingOff // the subsystem's own speed: nobody else is on the database
	reg := prometheus.NewRegistry()
	locks := expiry.Locks{Claim: c.NewLock("claim", 5*time.Second, 10*time.Second), Sweep: c.NewLease("sweep", time.Minute)}
	x, err := expiry.New(cfg, st, bucket, c, locks, b.logger, reg)
	if err != nil {
		return measurement{}, err
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
		return measurement{}, err
	}
	b.logf("           %d batches; mean claim %s, mean finishing transaction %s", r.Batches,
		meanLatency(reg, "pastebin_cleanup_claim_seconds"), meanLatency(reg, "pastebin_cleanup_finish_seconds"))
	if r.Tombstoned != int64(b.cfg.expired) || r.Errors != 0 {
		return measurement{}, fmt.Errorf("run cleaned %d of %d pastes with %d errors: %s", r.Tombstoned, b.cfg.expired, r.Errors, r.LastError)
	}
	return measurement{pastes: r.Tombstoned, seconds: elapsed.Seconds()}, benchdata.Verify(ctx, st.Pool(), true)
}

// floor is the set-based floor (benchdata.Floor): the fastest the database itself could clean.
func (b *bench) floor(ctx context.Context, st *store.Store) (measurement, error) {
	n, elapsed, err := benchdata.Floor(ctx, st.Pool())
	if err != nil {
		return measurement{}, err
	}
	return measurement{pastes: n, seconds: elapsed.Seconds()}, benchdata.Verify(ctx, st.Pool(), false)
}

// naive cleans a sample row by row, as the cleanup seed warns against: per paste one transaction,
// one S3 delete of the freed blob, one Redis DEL.
func (b *bench) naive(ctx context.Context, st *store.Store) (measurement, error) {
	bucket, err := b.openBucket(ctx)
	if err != nil {
		return measurement{}, err
	}
	start := time.Now()
	rows, err := st.Pool().Query(ctx, `SELECT short_code FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at <= now()
		ORDER BY expires_at LIMIT $1`, b.cfg.sample)
	if err != nil {
		return measurement{}, err
	}
	codes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return measurement{}, err
	}
	for _, code := range codes {
		key, err := naiveDelete(ctx, st, code)
		if err != nil {
			return measurement{}, err
		}
		if key != "" {
			if _, err := bucket.Delete(ctx, []string{key}); err != nil {
				return measurement{}, err
			}
		}
		if err := b.rdb.Del(ctx, "pb:paste:"+code).Err(); err != nil {
			return measurement{}, err
		}
	}
	return measurement{pastes: int64(len(codes)), seconds: time.Since(start).Seconds()}, nil
}

// naiveDelete is one paste's transaction: tombstone, decrement, delete the content at zero.
func naiveDelete(ctx context.Context, st *store.Store, code string) (string, error) {
	var freedKey string
	err := pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
		var hash []byte
		var owner []byte
		err := tx.QueryRow(ctx, `DELETE FROM pastes WHERE short_code = $1 AND status = 'NOT_EXPIRED' RETURNING content_hash, owner_token_hash`, code).Scan(&hash, &owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tombstones (short_code, owner_token_hash, deleted_reason) VALUES ($1, $2, 'expired')`,
			code, owner); err != nil {
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
