package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestOneBudgetForThreeProcesses: three `pastebin cleanup` processes with a budget of 3,000
// pastes/s (PASTEBIN_CLEANUP_MAX_RATE, the whole deployment's) drain one backlog together at
// 3,000/s within 5%, measured over the drain alone (from its first finishing transaction to its
// last, more than 20 s), and each takes a share within 20% of the others'. The budget is a rate it
// enforces, not a speed: the processes need a sixth of what the drain reaches unpaced on this
// machine, so the bound holds on a loaded machine too (a drain that could not keep up would fall
// short of it, and the test say so).
func TestOneBudgetForThreeProcesses(t *testing.T) {
	t.Parallel()
	const budget, batch, processes, expired = 3000, 500, 3, 69000
	env := testEnv(t)
	ctx := context.Background()
	if err := run(ctx, []string{"pastebin", "migrate"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, env["PASTEBIN_DATABASE_URL"], slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// No blob is uploaded: S3 answers the delete of a key it does not have as done.
	if err := storetest.Load(ctx, st.Pool(), storetest.SeedSpec{Pastes: expired + 1000, Expired: expired, Shared: 0.4, Tag: "Q"}); err != nil {
		t.Fatal(err)
	}
	env["PASTEBIN_CLEANUP_MAX_RATE"] = "3000"
	env["PASTEBIN_CLEANUP_PACING"] = "off"
	env["PASTEBIN_CLEANUP_WORKERS"] = "1"
	env["PASTEBIN_CLEANUP_BATCH_SIZE"] = "500"

	runs := make([]store.Run, processes)
	var wg sync.WaitGroup
	for i := range processes {
		wg.Go(func() { runs[i] = cleanupProcess(t, env) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	var n int
	var span float64
	err = st.Pool().QueryRow(ctx, `SELECT count(*), extract(epoch FROM max(deleted_at) - min(deleted_at))
		FROM tombstones WHERE deleted_reason = 'expired'`).Scan(&n, &span)
	if err != nil || n != expired {
		t.Fatalf("%d pastes cleaned (%v), want %d", n, err, expired)
	}
	rate := float64(n-batch) / span // the first batch, paid from the bucket's burst, opens the span
	t.Logf("%d pastes in %.1f s: %.0f pastes/s; shares %d, %d, %d", n, span, rate, runs[0].Tombstoned, runs[1].Tombstoned, runs[2].Tombstoned)
	if span < 20 {
		t.Errorf("the drain took %.1f s, want at least 20 to measure its rate", span)
	}
	if rate > budget*1.05 || rate < budget*0.95 {
		t.Errorf("three processes drained at %.0f pastes/s together, want %d within 5%%", rate, budget)
	}
	lo, hi := runs[0].Tombstoned, runs[0].Tombstoned
	for _, r := range runs {
		lo, hi = min(lo, r.Tombstoned), max(hi, r.Tombstoned)
	}
	if float64(hi-lo) >= 0.2*float64(hi) {
		t.Errorf("shares %d to %d differ by %.0f%%, want less than 20%%", lo, hi, 100*float64(hi-lo)/float64(hi))
	}
}

// cleanupProcess runs `pastebin cleanup --json` in a process of its own and returns its report.
func cleanupProcess(t *testing.T, env map[string]string) store.Run {
	cmd := exec.Command(os.Args[0], "cleanup", "--json")
	cmd.Env = []string{"PASTEBIN_TEST_AS_BINARY=1", "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("pastebin cleanup: %v\n%s", err, stderr.String())
		return store.Run{}
	}
	var r store.Run
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r.Status != "finished" {
		t.Errorf("pastebin cleanup's report: %v\n%s\n%s", err, out, stderr.String())
	}
	return r
}
