package expiry

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"pastebin/blob"
	"pastebin/blob/blobtest"
	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// TestMain lets the test binary double as a separate cleanup process (see workerProcess).
func TestMain(m *testing.M) {
	// TestWithoutRedis dials a dead Redis on purpose: go-redis would print each failed dial.
	redis.SetLogger(quietRedis{})
	if os.Getenv("PB_EXPIRY_WORKER") != "" {
		os.Exit(workerProcess())
	}
	os.Exit(m.Run())
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// workerProcess is another replica: its own connections to the same PostgreSQL, S3 bucket and Redis
// prefix, running one cleanup with PB_WORKERS workers. It prints "ready" once connected, then its
// report as JSON.
func workerProcess() int {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "worker process:", err); return 1 }
	st, err := store.Open(ctx, os.Getenv("PB_DB"), logger)
	if err != nil {
		return fail(err)
	}
	bucket, err := blob.Open(ctx, blob.Config{Endpoint: os.Getenv("PB_S3_ENDPOINT"), Bucket: os.Getenv("PB_S3_BUCKET"),
		Region: "us-east-1", PathStyle: true, AccessKeyID: os.Getenv("PB_S3_KEY"), SecretAccessKey: os.Getenv("PB_S3_SECRET"),
		Timeout: time.Minute})
	if err != nil {
		return fail(err)
	}
	c, err := cache.OpenURL(os.Getenv("PB_REDIS"), cache.ClientOptions{}, os.Getenv("PB_PREFIX"), logger)
	if err != nil {
		return fail(err)
	}
	cfg := DefaultConfig()
	cfg.Workers, _ = strconv.Atoi(os.Getenv("PB_WORKERS"))
	cfg.BatchSize, _ = strconv.Atoi(os.Getenv("PB_BATCH"))
	cfg.Host, cfg.Pacing.Mode = "worker-process", PacingOff // as env.expirer
	x, err := New(cfg, st, bucket, c, testLocks(c), logger, prometheus.NewRegistry())
	if err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	r, err := x.RunOnce(ctx, "test")
	if err != nil {
		return fail(err)
	}
	return fail(json.NewEncoder(os.Stdout).Encode(r))
}

// process is a running worker process.
type process struct {
	cmd    *exec.Cmd
	out    *bufio.Scanner
	report chan store.Run
}

// startWorkerProcess starts a cleanup process on e's services; s3Endpoint overrides the S3 address.
func (e *env) startWorkerProcess(workers, batch int, s3Endpoint string) *process {
	e.t.Helper()
	if s3Endpoint == "" {
		s3Endpoint = e.s3.Endpoint
	}
	db, _ := url.Parse(e.dbURL)
	q := db.Query()
	q.Set("application_name", "pb-worker-process")
	db.RawQuery = q.Encode()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PB_EXPIRY_WORKER=1", "PB_DB="+db.String(), "PB_S3_ENDPOINT="+s3Endpoint,
		"PB_S3_BUCKET="+e.s3.Bucket, "PB_S3_KEY="+e.s3.AccessKeyID, "PB_S3_SECRET="+e.s3.SecretAccessKey,
		"PB_REDIS="+cachetest.URL(e.t, e.redis), "PB_PREFIX="+e.prefix,
		"PB_WORKERS="+strconv.Itoa(workers), "PB_BATCH="+strconv.Itoa(batch))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = e.logs
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	p := &process{cmd: cmd, out: bufio.NewScanner(stdout), report: make(chan store.Run, 1)}
	e.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !p.out.Scan() || p.out.Text() != "ready" {
		e.t.Fatalf("worker process did not start: %q\n%s", p.out.Text(), e.logs.String())
	}
	go func() {
		var r store.Run
		if p.out.Scan() && json.Unmarshal(p.out.Bytes(), &r) == nil {
			p.report <- r
		}
		close(p.report)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	return p
}

// wait returns the process's report once it has finished.
func (p *process) wait(t *testing.T) store.Run {
	t.Helper()
	select {
	case r, ok := <-p.report:
		if !ok {
			t.Fatal("worker process ended without a report")
		}
		return r
	case <-time.After(3 * time.Minute):
		t.Fatal("worker process did not finish within 3 minutes")
	}
	return store.Run{}
}

// kill SIGKILLs the process, as a crash or the OOM killer would, and reaps it.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// waitFor polls cond every 20ms for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitBackendGone waits until the killed process's database connections are gone or idle, so
// whatever transaction it had open has been rolled back. Through a pooler, the server connections it
// used stay in the pool, idle, still named after it, and may serve this test's own queries.
func (e *env) waitBackendGone() {
	e.t.Helper()
	waitFor(e.t, "the killed worker's backends are gone", func() bool {
		return e.count(`SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'pb-worker-process' AND state <> 'idle' AND pid <> pg_backend_pid()`) == 0
	})
}

// TestScaleAcrossProcesses: 4 workers in this process and 2 in another clean 22,000 expired pastes
// with heavy content sharing, among 8,000 live ones. Every expired paste is cleaned exactly once, no
// live one is touched, and invariants 1 to 3 hold exactly in the database, the bucket and Redis.
func TestScaleAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 30,000 pastes")
	}
	t.Parallel()
	cachetest.ForEach(t, testScaleAcrossProcesses)
}

func testScaleAcrossProcesses(t *testing.T, kind cachetest.Kind) {
	e := newEnvOf(t, kind)
	const expired, live = 22000, 8000
	e.seed(storetest.SeedSpec{Pastes: expired + live, Expired: expired, Shared: 0.6, Tag: "X"})
	liveContent := e.count(`SELECT count(DISTINCT content_hash) FROM pastes WHERE expires_at > now()`)

	other := e.startWorkerProcess(2, 1000, "")
	local := e.runOnce(e.expirer(4))
	remote := other.wait(t)

	// The status guard would keep the tombstone count right even if two claims shared a row; the
	// claims themselves must add up exactly, each expired paste claimed once in all (invariant 7).
	if got := local.Claimed + remote.Claimed; got != expired {
		t.Errorf("claimed %d here and %d in the other process: %d in all, want exactly %d",
			local.Claimed, remote.Claimed, got, expired)
	}
	if got := local.Tombstoned + remote.Tombstoned; got != expired {
		t.Errorf("tombstoned %d here and %d in the other process: %d in all, want %d",
			local.Tombstoned, remote.Tombstoned, got, expired)
	}
	if local.Tombstoned == 0 || remote.Tombstoned == 0 {
		t.Errorf("one process did all the work (%d and %d): the test did not run them together", local.Tombstoned, remote.Tombstoned)
	}
	if n := e.count(`SELECT count(*) FROM tombstones WHERE deleted_reason = 'expired'`); n != expired {
		t.Errorf("%d expired pastes are tombstones, want %d", n, expired)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE status = 'NOT_EXPIRED' AND expires_at > now() AND content_hash IS NOT NULL`); n != live {
		t.Errorf("%d live pastes untouched, want %d", n, live)
	}
	if n := e.count(`SELECT count(*) FROM content`); n != liveContent {
		t.Errorf("%d content rows left, want the %d live pastes use", n, liveContent)
	}
	// Batches take their content rows in hash order, so six workers on shared content queue behind
	// each other rather than deadlock (which a retry would hide).
	if n := strings.Count(e.logs.String(), "transaction retried after a conflict"); n > 0 {
		t.Errorf("%d finishing transactions were retried after a deadlock", n)
	}
	a := e.audit()
	a.Consistent(t)
	if len(a.Outbox) != 0 {
		t.Errorf("outbox holds %d keys after both runs", len(a.Outbox))
	}
	if cached := e.cachedCodes(); len(cached) != live {
		t.Errorf("Redis holds %d paste keys, want the %d live ones", len(cached), live)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE short_code = ANY($1) AND status <> 'NOT_EXPIRED'`, e.cachedCodes()); n != 0 {
		t.Errorf("%d cached codes belong to cleaned pastes", n)
	}
}

// TestKilledBeforeCommit: a worker process SIGKILLed after its claim and before its transaction
// committed leaves its rows claimed and every ref_count as it was; the watchdog returns them and a
// later run finishes them, each exactly once.
func TestKilledBeforeCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 3000, Expired: 2000, Shared: 0.5, Tag: "K"})
	// Hold every content row, so the worker's finishing transaction waits inside its first statement.
	ctx := context.Background()
	conn, err := e.store.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM content FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	p := e.startWorkerProcess(1, 500, "")
	waitFor(t, "the worker waits on a row lock inside its transaction", func() bool {
		return e.count(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pb-worker-process' AND wait_event_type = 'Lock'`) > 0
	})
	p.kill()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitBackendGone()

	// The batch held inside its transaction, and the next one its pipeline claimed meanwhile.
	claimed := e.count(`SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims`)
	if claimed != 500 && claimed != 1000 {
		t.Fatalf("%d rows claimed after the kill, want one or two batches of 500", claimed)
	}
	if n := e.count(`SELECT count(*) FROM tombstones`); n != 0 {
		t.Fatalf("%d tombstones: the killed transaction committed", n)
	}
	e.audit().Consistent(t)

	e.exec(`UPDATE cleanup_claims SET claimed_at = now() - interval '1 hour'`)
	r := e.runOnce(e.expirer(2))
	if r.ResetStuck != int64(claimed) || r.Tombstoned != 2000 {
		t.Errorf("later run: reset %d, tombstoned %d; want %d and 2000", r.ResetStuck, r.Tombstoned, claimed)
	}
	a := e.audit()
	a.Consistent(t)
	if len(a.Outbox) != 0 {
		t.Errorf("outbox %d", len(a.Outbox))
	}
}

// TestKilledAfterCommit: a worker process SIGKILLed after its transaction committed and before its S3
// delete leaves the freed blobs in the outbox, which finishes the job; no ref_count changes twice.
func TestKilledAfterCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 3000, Expired: 2000, Shared: 0.5, Tag: "A"})
	proxy := blobtest.NewProxy(t, strings.TrimPrefix(e.s3.Endpoint, "http://"))
	p := e.startWorkerProcess(1, 500, "http://"+proxy.Addr())
	proxy.Stall() // S3 hangs from now on: the worker commits, then waits in DeleteObjects
	waitFor(t, "a committed batch freed blobs", func() bool {
		return e.count(`SELECT count(*) FROM blob_outbox`) > 0
	})
	time.Sleep(200 * time.Millisecond) // it is now inside the S3 call, which never answers
	p.kill()
	proxy.Cut() // the dead process's request dies with it rather than reach S3 late
	e.waitBackendGone()

	// Later batches may have committed too while the first waited on S3: the pipeline does not
	// hold the database up for S3.
	done := e.count(`SELECT count(*) FROM tombstones`)
	if done == 0 || done%500 != 0 {
		t.Fatalf("%d tombstones, want whole batches of 500\nlogs:\n%s", done, e.logs.String())
	}
	a := e.audit()
	freedByFirstBatch := len(a.Outbox)
	if len(a.RefMismatches) > 0 || len(a.UntrackedBlobs) > 0 {
		t.Fatalf("after the kill: %d ref mismatches, %d untracked blobs", len(a.RefMismatches), len(a.UntrackedBlobs))
	}
	// A batch claimed after the last commit may be left in flight, whenever the kill landed: the
	// watchdog's timeout passes for it (rather than the test waiting ten minutes).
	inFlight := e.count(`SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims`)
	e.exec(`UPDATE cleanup_claims SET claimed_at = now() - interval '1 hour'`)
	e.exec(`UPDATE blob_deletions SET next_attempt = now()`) // the outbox lease ran out
	e.exec(`UPDATE blob_deletion_batches SET next_attempt = now()`)
	r := e.runOnce(e.expirer(2))
	if int(r.Tombstoned) != 2000-done || r.ResetStuck != int64(inFlight) {
		t.Errorf("later run reset %d and tombstoned %d, want the %d left in flight and the other %d",
			r.ResetStuck, r.Tombstoned, inFlight, 2000-done)
	}
	if r.BlobsDeleted != r.ContentFreed+int64(freedByFirstBatch) {
		t.Errorf("later run deleted %d blobs, want its own %d plus the %d the killed worker left",
			r.BlobsDeleted, r.ContentFreed, freedByFirstBatch)
	}
	a = e.audit()
	a.Consistent(t)
	if len(a.Outbox) != 0 {
		t.Errorf("outbox %d after the run", len(a.Outbox))
	}
}
