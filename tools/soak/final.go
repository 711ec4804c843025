package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// readBack reads every paste the load created, with every process up and nothing else going on:
// the live ones must answer their bytes, the expired, deleted and burned ones 410; those whose
// delete or burn lost its answer may do either. A burn-after-reading paste still alive is taken
// by this read.
func (s *soak) readBack(ctx context.Context) finalCounts {
	pastes := s.ledger.all()
	work := make(chan *paste)
	var mu sync.Mutex
	var counts finalCounts
	var wg sync.WaitGroup
	for i := range s.cfg.clients {
		r := rand.New(rand.NewPCG(s.cfg.seed, uint64(1000+i)))
		wg.Go(func() {
			for p := range work {
				kind := s.readBackOne(ctx, r, p)
				mu.Lock()
				counts.add(kind)
				mu.Unlock()
			}
		})
	}
	for _, p := range pastes {
		work <- p
	}
	close(work)
	wg.Wait()
	return counts
}

// readBackOne reads p until it answers something other than 503, a few times at most, and judges
// the answer like any read. It says which kind of answer p gave.
func (s *soak) readBackOne(ctx context.Context, r *rand.Rand, p *paste) string {
	var a answer
	for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
		p.startRead(true)
		var lost bool
		a, lost = s.client.try(ctx, r, p.reader(true, "/raw/"+p.code))
		if v := p.judgeRead(a, lost, true); v != "" {
			s.violations.add("at the end: %s", v)
		}
		if a.err == nil && a.status != http.StatusServiceUnavailable {
			break
		}
		sleep(ctx, time.Second)
	}
	switch {
	case a.err != nil || a.status == http.StatusServiceUnavailable:
		s.violations.add("at the end: paste %s unreadable: %v %d %s", p.code, a.err, a.status, snippet(a.body))
		return "unreadable"
	case p.uncertain():
		return "uncertain"
	case a.status == http.StatusOK:
		return "live"
	case a.status == http.StatusGone:
		return "gone"
	}
	return "unreadable" // a 404 or a 500: judgeRead recorded the violation
}

// uncertain reports whether a delete or a burn of p lost its answer, so p may or may not be gone.
func (p *paste) uncertain() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return (p.deleteLost && p.deletedAt.IsZero()) || (p.burnLost && p.burnedAt.IsZero())
}

func (c *finalCounts) add(kind string) {
	switch kind {
	case "live":
		c.live++
	case "gone":
		c.gone++
	case "uncertain":
		c.uncertain++
	default:
		c.unreadable++
	}
}

// checkDatabase checks what settling must have reached, independently of fsck: no claim left in
// progress, an empty outbox, every ref_count equal to the pastes pointing at its content
// (invariant 1, the one a double decrement would break first), and no create made twice: each
// paste's title is its create's Idempotency-Key, tombstones included.
func (s *soak) checkDatabase(ctx context.Context) {
	var inProgress, outbox, mismatched, duplicated int
	err := s.pool.QueryRow(ctx, `
		SELECT (SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims),
		       (SELECT count(*) FROM blob_outbox),
		       (SELECT count(*) FROM content c
		        WHERE c.ref_count <> (SELECT count(*) FROM pastes p WHERE p.content_hash = c.content_hash)),
		       (SELECT count(*) FROM (SELECT title FROM pastes GROUP BY title HAVING count(*) > 1) d)`,
	).Scan(&inProgress, &outbox, &mismatched, &duplicated)
	switch {
	case err != nil:
		s.violations.add("at the end: database check failed: %v", err)
	case inProgress > 0 || outbox > 0 || mismatched > 0 || duplicated > 0:
		s.violations.add("at the end: %d pastes still claimed, %d blobs in the outbox, %d content rows whose ref_count is wrong, %d creates made more than once",
			inProgress, outbox, mismatched, duplicated)
	}
}

// checkFailures judges the requests that failed through the balancer: each must have been in
// flight on a process killed with SIGKILL.
func (s *soak) checkFailures() {
	for _, f := range s.timeline.unexplained() {
		s.violations.add("a request failed while no process was being killed: sent %s, failed %s: %s",
			stamp(f.from), stamp(f.to), f.what)
	}
}

// fsck runs `pastebin fsck --json`, which checks the invariants across PostgreSQL, S3 and Redis,
// and returns its verdict. A non-zero exit is a violation.
func (s *soak) fsck(ctx context.Context) string {
	out, err := s.pastebin(ctx, "fsck", "fsck", "--json", "-orphan-grace", orphanGrace.String())
	if err == nil {
		return "consistent"
	}
	var report struct {
		Problems []string `json:"problems"`
	}
	if json.Unmarshal([]byte(lastLines(out, 1)), &report) == nil && len(report.Problems) > 0 {
		for _, p := range report.Problems {
			s.violations.add("fsck: %s", p)
		}
	} else {
		s.violations.add("fsck: %v:\n%s", err, lastLines(out, 10))
	}
	return "violations found, details in " + filepath.Join(s.cfg.dir, "fsck.log")
}

// pastebin runs a pastebin command against the soak's services, its output to <name>.log, and
// returns that output.
func (s *soak) pastebin(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, s.cfg.pastebin, args...)
	cmd.Env = append(append([]string(nil), s.cluster.env...), "PASTEBIN_ORPHAN_GRACE="+orphanGrace.String())
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if werr := os.WriteFile(filepath.Join(s.cfg.dir, name+".log"), out.Bytes(), 0o644); werr != nil {
		err = errors.Join(err, werr)
	}
	if err != nil {
		return out.String(), fmt.Errorf("pastebin %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
