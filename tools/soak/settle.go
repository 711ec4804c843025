package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backlog is the work the system still has: what settling waits for.
type backlog struct {
	expired    int // live pastes that expired before settling began: cleanup has not reached them
	inProgress int // claimed by cleanup and not finished (a killed worker's, until the watchdog)
	outbox     int // blobs waiting for deletion
}

func (b backlog) done() bool { return b.expired == 0 && b.inProgress == 0 && b.outbox == 0 }

func (b backlog) String() string {
	return fmt.Sprintf("%d expired pastes not cleaned, %d claimed and not finished, %d blobs in the outbox",
		b.expired, b.inProgress, b.outbox)
}

// settle waits until the system has nothing left to do for what happened before since: every
// paste expired by then cleaned, no claim left in progress (the watchdog returns a killed worker's
// after PASTEBIN_CLEANUP_STUCK_AFTER), the outbox empty. Meanwhile it has cleanup runs started on
// the serve processes in turn and waits for each to finish. It returns how many it asked for.
func (s *soak) settle(ctx context.Context, since time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.settle)
	defer cancel()
	var b backlog
	var err error
	for runs := 0; ; runs++ {
		if b, err = s.backlog(ctx, since); err == nil && b.done() {
			return runs, nil
		}
		if ctx.Err() != nil {
			return runs, fmt.Errorf("not settled after %s: %s (last error: %v)", s.cfg.settle, b, err)
		}
		s.fastForwardOutbox(ctx)
		if err = s.cleanupRun(ctx, runs%len(s.cluster.serves)); err != nil {
			sleep(ctx, time.Second)
		}
	}
}

func (s *soak) backlog(ctx context.Context, since time.Time) (backlog, error) {
	var b backlog
	err := s.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at < $1),
		       (SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims),
		       (SELECT count(*) FROM blob_outbox)`, since).Scan(&b.expired, &b.inProgress, &b.outbox)
	return b, err
}

// fastForwardOutbox makes every outbox entry due now. Its leases (a minute after a batch commits,
// five after a deleter claims keys) and its back-off after failed deletes exist for processes that
// die and for S3 outages; the soak caused many of both, and plays the clock forward rather than
// wait minutes. A key still leased to a live deleter may then be deleted twice, which is harmless:
// deleting a missing key succeeds. The uploads of failed creates, held for the grace period in case
// their create committed after all, are released too: the load has stopped, so every create's fate
// is known by now.
func (s *soak) fastForwardOutbox(ctx context.Context) {
	_, _ = s.pool.Exec(ctx, `
		UPDATE blob_deletions SET next_attempt = now(), not_before = least(not_before, now())
		WHERE next_attempt > now()`)
	_, _ = s.pool.Exec(ctx, `UPDATE blob_deletion_batches SET next_attempt = now() WHERE next_attempt > now()`)
}

// cleanupRun has serve process i start a cleanup run (POST /admin/cleanup) and waits until the run
// is over.
func (s *soak) cleanupRun(ctx context.Context, i int) error {
	id, err := s.cluster.startCleanup(ctx, s.admin, i)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		var run struct {
			Status string `json:"status"`
		}
		path := "/admin/cleanup/runs/" + strconv.FormatInt(id, 10)
		if err := s.cluster.admin(ctx, s.admin, http.MethodGet, i, path, http.StatusOK, &run); err != nil {
			return err
		}
		if run.Status != "running" {
			return nil
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return ctx.Err()
}

// admin sends an admin API request to serve process i and decodes its JSON answer into out.
func (c *cluster) admin(ctx context.Context, hc *http.Client, method string, i int, path string, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.urls[i]+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.adminToken)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, snippet(body))
	}
	return json.Unmarshal(body, out)
}

// sweepOrphans runs `pastebin sweep` with a short grace: once the load has stopped, every upload
// whose create never committed (a process killed between the two) is an orphan, and this is the
// sweeper of invariant 3 finishing them. A serve killed in the middle of its own sweep leaves its
// lease in Redis until the lease runs out (a minute): meanwhile the sweep says another process is
// sweeping, and is asked again. It returns the sweep's report line.
func (s *soak) sweepOrphans(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sweepLeaseWait)
	defer cancel()
	for {
		out, err := s.pastebin(ctx, "sweep", "sweep", "-orphan-grace", orphanGrace.String())
		if err == nil {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			return lines[len(lines)-1], nil // the report; log lines come before it
		}
		if !strings.Contains(out, sweepRunning) || ctx.Err() != nil {
			return "", fmt.Errorf("%w: %s", err, lastLines(out, 3))
		}
		sleep(ctx, 5*time.Second)
	}
}

// sweepRunning is what `pastebin sweep` says when another process holds the sweep's lease
// (expiry.ErrSweepRunning); sweepLeaseWait outlasts a lease its holder can no longer refresh.
const (
	sweepRunning   = "another process is sweeping the bucket"
	sweepLeaseWait = 90 * time.Second
)

// orphanGrace is the grace of the final sweep and fsck: uploads younger than this may belong to a
// create still committing. The soak waits longer than this after the load before using it.
const orphanGrace = 5 * time.Second
