package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// walCost is the WAL a piece of work wrote: all of it, and the part that is full-page images (the
// first change of each page after a checkpoint writes the whole page).
type walCost struct {
	bytes, fpiBytes, records, fpis int64
}

// meter reads the WAL position and statistics of the server, and pg_waldump's split of a stretch
// of WAL into records and full-page images, when this process can read the server's WAL (it runs
// on the same machine, as root or postgres).
type meter struct {
	pool    *pgxpool.Pool
	waldump string // pg_waldump's path
	walDir  string // the server's pg_wal
}

func newMeter(ctx context.Context, pool *pgxpool.Pool) (*meter, error) {
	var dataDir string
	var version int
	err := pool.QueryRow(ctx, `SELECT current_setting('data_directory'), current_setting('server_version_num')::int`).
		Scan(&dataDir, &version)
	if err != nil {
		return nil, err
	}
	return &meter{pool: pool, waldump: fmt.Sprintf("/usr/lib/postgresql/%d/bin/pg_waldump", version/10000),
		walDir: dataDir + "/pg_wal"}, nil
}

type walMark struct {
	lsn           string
	records, fpis int64
}

func (m *meter) mark(ctx context.Context) (walMark, error) {
	var w walMark
	// The flush position: every phase commits durably, so its WAL is all on disk, where pg_waldump reads it.
	err := m.pool.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn()::text, wal_records, wal_fpi FROM pg_stat_wal`).
		Scan(&w.lsn, &w.records, &w.fpis)
	return w, err
}

// measure runs fn, after a checkpoint if asked (so that the full-page images it causes are counted
// as a cold start would), and returns the WAL it wrote.
func (m *meter) measure(ctx context.Context, checkpoint bool, fn func() error) (walCost, error) {
	if checkpoint {
		if _, err := m.pool.Exec(ctx, "CHECKPOINT"); err != nil {
			return walCost{}, err
		}
	}
	from, err := m.mark(ctx)
	if err != nil {
		return walCost{}, err
	}
	if err := fn(); err != nil {
		return walCost{}, err
	}
	to, err := m.mark(ctx)
	if err != nil {
		return walCost{}, err
	}
	// pg_stat_wal is flushed by each backend when it goes idle; the WAL position is exact.
	c := walCost{records: to.records - from.records, fpis: to.fpis - from.fpis}
	if err := m.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`, to.lsn, from.lsn).Scan(&c.bytes); err != nil {
		return walCost{}, err
	}
	c.fpiBytes = m.fpiBytes(from.lsn, to.lsn)
	return c, nil
}

// fpiBytes asks pg_waldump how many bytes of the WAL from..to are full-page images; -1 when it
// cannot tell (no access to the server's WAL).
func (m *meter) fpiBytes(from, to string) int64 {
	out, err := exec.Command(m.waldump, "--stats", "-p", m.walDir, "-s", from, "-e", to).Output()
	if err != nil {
		return -1
	}
	// Total  <records>  <record bytes> [x%]  <FPI bytes> [y%]  <combined> [100%]
	for _, line := range bytes.Split(out, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) >= 5 && f[0] == "Total" {
			n, err := strconv.ParseInt(f[4], 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
