package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Run is the report of one cleanup run.
type Run struct {
	ID          int64      `json:"id"`
	Trigger     string     `json:"trigger"`
	Host        string     `json:"host"`
	Status      string     `json:"status"` // running, finished, failed, or abandoned (no heartbeat)
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	HeartbeatAt time.Time  `json:"heartbeat_at"`
	Duration    float64    `json:"duration_seconds"` // so far, for a run still going
	Workers     int        `json:"workers"`
	RunState
}

// RunState is what the process running a run writes to its report as it goes.
type RunState struct {
	RunCounts
	Pacing         RunPacing `json:"pacing"`
	RepairedHashes []HexHash `json:"repaired_hashes"` // the first MaxRepairedHashes content rows recounted
	LastError      string    `json:"last_error"`
}

// MaxRepairedHashes is how many repaired content hashes a run report keeps; the count has them all.
const MaxRepairedHashes = 100

// RunCounts are a run's counters.
type RunCounts struct {
	ResetStuck      int64 `json:"reset_stuck"`
	Claimed         int64 `json:"claimed"`
	Tombstoned      int64 `json:"tombstoned"`
	ContentFreed    int64 `json:"content_freed"`
	BlobsDeleted    int64 `json:"blobs_deleted"`
	BlobsFailed     int64 `json:"blobs_failed"`
	Purged          int64 `json:"purged"`
	Batches         int64 `json:"batches"`
	Errors          int64 `json:"errors"`
	BatchesRetried  int64 `json:"batches_retried"`  // finishing transactions run again after a passing failure
	ContentRepaired int64 `json:"content_repaired"` // content rows whose wrong ref_count broke a batch, recounted
}

// RunPacing is how the deployment's drain was paced as a run saw it (docs/design.md, "Pacing the
// drain"): the rate is the whole deployment's, the same in every replica's run report.
type RunPacing struct {
	Mode          string   `json:"mode"`           // off, max_rate or auto
	RateLimit     *float64 `json:"rate_limit"`     // pastes/s for the whole deployment now; null: no limit
	Reason        string   `json:"reason"`         // why the rate is what it is: max_rate, min_rate, rising, at_budget, over_budget, no_signal, reading_level
	Signal        float64  `json:"signal"`         // auto: the latency steered by, over its level before the drain
	Aim           float64  `json:"aim"`            // auto: where the controller holds the signal, under the budget
	Source        string   `json:"source"`         // auto: users (their p99) or database (the finishing transaction)
	Controller    string   `json:"controller"`     // auto: the process that runs the controller
	WaitedSeconds float64  `json:"waited_seconds"` // time this run's workers waited for the budget, summed
}

// String says how a drain is paced, for people: its mode, the rate in force and why.
func (p RunPacing) String() string {
	if p.RateLimit == nil {
		return p.Mode + ", no limit"
	}
	s := fmt.Sprintf("%s, %.0f pastes/s", p.Mode, *p.RateLimit)
	if p.Reason != "" {
		s += ": " + strings.ReplaceAll(p.Reason, "_", " ")
	}
	if p.Source != "" && p.Signal > 0 {
		what := "users' p99"
		if p.Source == "database" {
			what = "finishing latency"
		}
		s += fmt.Sprintf(", %s %.2f× before", what, p.Signal)
		if p.Aim > 0 {
			s += fmt.Sprintf(" (aim %.2f×)", p.Aim)
		}
	}
	return s
}

// abandonedAfter is how long a running run may go without a heartbeat before it counts as abandoned:
// its process died.
const abandonedAfter = 2 * time.Minute

// StartRun records a new running run and returns its id. An admin's request for it, when audit is
// not nil, is recorded in the same transaction, with the run's id.
func (s *Store) StartRun(ctx context.Context, trigger, host string, workers int, audit *AuditRecord) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO cleanup_runs (trigger, host, workers) VALUES ($1, $2, $3) RETURNING id`,
			trigger, host, workers).Scan(&id)
		if err != nil || audit == nil {
			return err
		}
		return record(ctx, tx, audit.withRun(id, false))
	})
	if err != nil {
		return 0, fmt.Errorf("start run: %w", err)
	}
	return id, nil
}

// UpdateRun writes a run's state and heartbeat; with finish, also its end and final status.
func (s *Store) UpdateRun(ctx context.Context, id int64, st RunState, finish bool) error {
	c, p := st.RunCounts, st.Pacing
	_, err := s.pool.Exec(ctx, `
		UPDATE cleanup_runs SET reset_stuck = $2, claimed = $3, tombstoned = $4, content_freed = $5,
		       blobs_deleted = $6, blobs_failed = $7, purged = $8, batches = $9, errors = $10, last_error = $11,
		       batches_retried = $13, content_repaired = $14, repaired_hashes = $15,
		       pacing = $16, rate_limit = $17, paced_reason = $18, paced_seconds = $19,
		       pacing_signal = $20, pacing_source = $21, pacing_controller = $22, pacing_aim = $23,
		       heartbeat_at = now(),
		       finished_at = CASE WHEN $12 THEN now() END,
		       status = CASE WHEN NOT $12 THEN 'running' WHEN $11 = '' THEN 'finished' ELSE 'failed' END
		WHERE id = $1`,
		id, c.ResetStuck, c.Claimed, c.Tombstoned, c.ContentFreed, c.BlobsDeleted, c.BlobsFailed, c.Purged,
		c.Batches, c.Errors, st.LastError, finish, c.BatchesRetried, c.ContentRepaired, hashBytes(st.RepairedHashes),
		p.Mode, p.RateLimit, p.Reason, p.WaitedSeconds, p.Signal, p.Source, p.Controller, p.Aim)
	if err != nil {
		return fmt.Errorf("update run %d: %w", id, err)
	}
	return nil
}

func hashBytes(hs []HexHash) [][]byte {
	out := make([][]byte, len(hs))
	for i, h := range hs {
		out[i] = h
	}
	return out
}

const runColumns = `id, trigger, host,
	CASE WHEN status = 'running' AND heartbeat_at < now() - $1::interval THEN 'abandoned' ELSE status END,
	started_at, finished_at, heartbeat_at,
	extract(epoch FROM coalesce(finished_at, now()) - started_at)::float8, workers, reset_stuck, claimed, tombstoned, content_freed,
	blobs_deleted, blobs_failed, purged, batches, errors, batches_retried, content_repaired, repaired_hashes,
	pacing, rate_limit, paced_reason, paced_seconds, pacing_signal, pacing_source, pacing_controller, pacing_aim, last_error`

func scanRun(row pgx.Row) (Run, error) {
	var r Run
	var hashes [][]byte
	c, p := &r.RunCounts, &r.Pacing
	err := row.Scan(&r.ID, &r.Trigger, &r.Host, &r.Status, &r.StartedAt, &r.FinishedAt, &r.HeartbeatAt,
		&r.Duration, &r.Workers, &c.ResetStuck, &c.Claimed, &c.Tombstoned, &c.ContentFreed, &c.BlobsDeleted,
		&c.BlobsFailed, &c.Purged, &c.Batches, &c.Errors, &c.BatchesRetried, &c.ContentRepaired, &hashes,
		&p.Mode, &p.RateLimit, &p.Reason, &p.WaitedSeconds, &p.Signal, &p.Source, &p.Controller, &p.Aim, &r.LastError)
	r.RepairedHashes = make([]HexHash, len(hashes))
	for i, h := range hashes {
		r.RepairedHashes[i] = h
	}
	return r, err
}

// Run returns the run with id, or ErrNotFound.
func (s *Store) Run(ctx context.Context, id int64) (Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM cleanup_runs WHERE id = $2`, abandonedAfter, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Run{}, ErrNotFound
	}
	if err != nil {
		return Run{}, fmt.Errorf("read run %d: %w", id, err)
	}
	return r, nil
}

// Runs returns the latest runs, newest first.
func (s *Store) Runs(ctx context.Context, limit int) ([]Run, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM cleanup_runs ORDER BY started_at DESC, id DESC LIMIT $2`,
		abandonedAfter, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Run, error) { return scanRun(row) })
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}
