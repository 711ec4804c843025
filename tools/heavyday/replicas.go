package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"pastebin/store"
)

// replicaPort is the first replica's port: above Linux's ephemeral range (32768-60999), above the
// chaos soak's ports (61000-63699) and below the project's own services (63790 and up).
const replicaPort = 63700

// adminToken is the replicas' admin token: they listen on loopback only, for this run.
const adminToken = "heavyday-admin-token"

// replica is one `pastebin serve` process.
type replica struct {
	name   string
	url    string
	cmd    *exec.Cmd
	exited chan error
	client *http.Client
}

// replicaSettings is how a phase runs its replicas.
type replicaSettings struct {
	db      string  // database name
	pacing  string  // PASTEBIN_CLEANUP_PACING
	maxRate string  // PASTEBIN_CLEANUP_MAX_RATE, the deployment's
	budget  float64 // PASTEBIN_CLEANUP_LATENCY_BUDGET; 0: the default
	batch   int     // PASTEBIN_CLEANUP_BATCH_SIZE; 0: -batch-size
	logTo   string  // folder of the replicas' logs
}

// startReplicas starts the replicas and waits until each answers /readyz.
func (b *bench) startReplicas(ctx context.Context, s replicaSettings) ([]*replica, error) {
	var rs []*replica
	for i := range b.cfg.replicas {
		r, err := b.startReplica(ctx, i, s)
		if err != nil {
			stopReplicas(rs)
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func (b *bench) startReplica(ctx context.Context, i int, s replicaSettings) (*replica, error) {
	addr := "127.0.0.1:" + strconv.Itoa(replicaPort+i)
	r := &replica{name: fmt.Sprintf("serve-%d", i+1), url: "http://" + addr, exited: make(chan error, 1),
		client: &http.Client{Timeout: 30 * time.Second}}
	log, err := os.Create(filepath.Join(s.logTo, r.name+".log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	r.cmd = exec.Command(b.cfg.pastebin, "serve")
	r.cmd.Stdout, r.cmd.Stderr = log, log
	r.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"PASTEBIN_ADDR=" + addr, "PASTEBIN_DATABASE_URL=" + b.dbs.URL(s.db), "PASTEBIN_MIGRATE=false",
		"PASTEBIN_REDIS_URL=" + b.cfg.services.RedisURL, "PASTEBIN_S3_ENDPOINT=" + b.cfg.services.S3Endpoint,
		"PASTEBIN_S3_BUCKET=" + b.bucket, "PASTEBIN_S3_ACCESS_KEY_ID=" + b.cfg.services.S3Key,
		"PASTEBIN_S3_SECRET_ACCESS_KEY=" + b.cfg.services.S3Secret,
		"PASTEBIN_ADMIN_TOKEN=" + adminToken, "PASTEBIN_RATE_CREATE=off", "PASTEBIN_LOG_FORMAT=json",
		"PASTEBIN_CLEANUP_WORKERS=" + strconv.Itoa(b.cfg.workers), "PASTEBIN_CLEANUP_BATCH_SIZE=" + strconv.Itoa(cmp.Or(s.batch, b.cfg.batchSize)),
		"PASTEBIN_CLEANUP_SCHEDULE=@every 1000h",
		"PASTEBIN_SWEEP_SCHEDULE=off", "PASTEBIN_CLEANUP_PACING=" + s.pacing, "PASTEBIN_CLEANUP_MAX_RATE=" + s.maxRate,
	}
	if s.budget > 0 {
		r.cmd.Env = append(r.cmd.Env, "PASTEBIN_CLEANUP_LATENCY_BUDGET="+strconv.FormatFloat(s.budget, 'f', -1, 64))
	}
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { r.exited <- r.cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		select {
		case err := <-r.exited:
			return nil, fmt.Errorf("%s exited at start: %v (log: %s)", r.name, err, log.Name())
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := r.client.Get(r.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
	}
	r.stop()
	return nil, fmt.Errorf("%s not ready after a minute (log: %s)", r.name, log.Name())
}

// stop asks the replica to stop (SIGTERM), and kills it if it has not within a minute. It returns
// the process's peak resident memory (VmHWM), read just before.
func (r *replica) stop() int64 {
	peak := peakRSS(r.cmd.Process.Pid)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(time.Minute):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	return peak
}

func stopReplicas(rs []*replica) []int64 {
	peaks := make([]int64, len(rs))
	for i, r := range rs {
		peaks[i] = r.stop()
	}
	return peaks
}

// peakRSS returns a process's peak resident set size in bytes, from /proc.
func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			return n * 1024
		}
	}
	return 0
}

// startCleanup asks the replica for a cleanup run, as an operator would, and returns its id.
func (r *replica) startCleanup(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/admin/cleanup", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	var run store.Run
	if err := r.do(req, http.StatusAccepted, &run); err != nil {
		return 0, fmt.Errorf("%s: POST /admin/cleanup: %w", r.name, err)
	}
	return run.ID, nil
}

// run reads the report of cleanup run id.
func (r *replica) run(ctx context.Context, id int64) (store.Run, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/admin/cleanup/runs/%d", r.url, id), nil)
	if err != nil {
		return store.Run{}, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	var run store.Run
	err = r.do(req, http.StatusOK, &run)
	return run, err
}

func (r *replica) do(req *http.Request, want int, into any) error {
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// errRunFailed is a cleanup run that ended in any state but finished.
var errRunFailed = errors.New("cleanup run did not finish")
