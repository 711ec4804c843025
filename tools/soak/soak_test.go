package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakShort is the short soak that make test runs: the whole program, 30 seconds of load and
// faults (at most 30,000 operations), then settling, fsck and the read-back.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30-second chaos soak with its own processes")
	}
	bin := buildPastebin(t)
	dir := t.TempDir()
	var out bytes.Buffer
	args := []string{"soak", "-pastebin", bin, "-dir", dir, "-duration", "30s", "-max-ops", "30000",
		"-fault-every", "2s", "-clients", "6"}
	err := run(t.Context(), args, os.Getenv, &out)
	t.Logf("soak output:\n%s", out.String())
	if err != nil {
		for _, name := range []string{"serve-0.log", "serve-1.log"} {
			if b, rerr := os.ReadFile(filepath.Join(dir, name)); rerr == nil {
				t.Logf("last lines of %s:\n%s", name, lastLines(string(b), 30))
			}
		}
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "violations 0") {
		t.Errorf("no summary line with violations 0 in the output")
	}
}

// buildPastebin builds the service's binary, in the service's module (go.mod's replace names its
// folder), so that the soak runs what make build ships.
func buildPastebin(t *testing.T) string {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "pastebin").Output()
	if err != nil {
		t.Fatalf("find the pastebin module: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "pastebin")
	build := exec.Command("go", "build", "-o", bin, "./cmd/pastebin")
	build.Dir = strings.TrimSpace(string(dir))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pastebin: %v\n%s", err, out)
	}
	return bin
}

// TestJudgeRead: what the checks call a violation, and what they accept, for reads of one paste.
func TestJudgeRead(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	body := []byte("the content")
	tests := []struct {
		name    string
		p       *paste
		answer  answer
		lost    bool
		raw     bool
		wantBad bool
	}{
		{"live served", &paste{body: body, expiresAt: at(time.Hour)}, answer{status: 200, body: body, sent: at(0)}, false, true, false},
		{"wrong bytes", &paste{body: body}, answer{status: 200, body: []byte("other"), sent: at(0)}, false, true, true},
		{"expired served", &paste{body: body, expiresAt: at(0)}, answer{status: 200, body: body, sent: at(2 * time.Second)}, false, true, true},
		{"expiring, within the margin", &paste{body: body, expiresAt: at(0)}, answer{status: 200, body: body, sent: at(500 * time.Millisecond)}, false, true, false},
		{"deleted served", &paste{body: body, deletedAt: at(0)}, answer{status: 200, body: body, sent: at(time.Millisecond)}, false, true, true},
		{"read before the delete answered", &paste{body: body, deletedAt: at(0)}, answer{status: 200, body: body, sent: at(-time.Millisecond)}, false, true, false},
		{"metadata of a deleted paste", &paste{body: body, deletedAt: at(0)}, answer{status: 200, sent: at(time.Second)}, false, false, true},
		{"burned served again", &paste{body: body, burn: true, burnReads: 1, burnedAt: at(0)}, answer{status: 200, body: body, sent: at(time.Second)}, false, true, true},
		{"two burn reads at once", &paste{body: body, burn: true, burnReads: 1, burnedAt: at(time.Second)}, answer{status: 200, body: body, sent: at(0)}, false, true, true},
		{"live gone", &paste{body: body, expiresAt: at(time.Hour)}, answer{status: 410, received: at(0)}, false, true, true},
		{"gone while a delete is in flight", &paste{body: body, deleting: 1}, answer{status: 410, received: at(0)}, false, true, false},
		{"gone after a lost delete", &paste{body: body, deleteLost: true}, answer{status: 410, received: at(0)}, false, true, false},
		{"burn gone after a lost attempt", &paste{body: body, burn: true}, answer{status: 410, received: at(0)}, true, true, false},
		{"expired gone", &paste{body: body, expiresAt: at(0)}, answer{status: 410, received: at(-500 * time.Millisecond)}, false, true, false},
		{"not found", &paste{body: body}, answer{status: 404}, false, true, true},
		{"internal error", &paste{body: body}, answer{status: 500}, false, true, true},
		{"S3 down", &paste{body: body}, answer{status: 503}, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			p.code = "abcdefghijk"
			p.startRead(tt.raw)
			got := p.judgeRead(tt.answer, tt.lost, tt.raw)
			if (got != "") != tt.wantBad {
				t.Errorf("judgeRead = %q, want a violation: %v", got, tt.wantBad)
			}
		})
	}
}

// TestJudgeCreate: a create's outcome, and the expiry it must carry.
func TestJudgeCreate(t *testing.T) {
	t0 := time.Now().UTC()
	c := createReq{body: []byte("abc"), lifetime: 5}
	created := func(expires time.Time) []byte {
		return []byte(`{"code":"abcdefghijk","delete_token":"tok","size":3,"expires_at":"` + expires.Format(time.RFC3339Nano) + `"}`)
	}
	tests := []struct {
		name        string
		answer      answer
		lost        bool
		wantOutcome createOutcome
		wantBad     bool
	}{
		{"created", answer{status: 201, body: created(t0.Add(5 * time.Second)), received: t0}, false, createOK, false},
		{"wrong expiry", answer{status: 201, body: created(t0.Add(time.Minute)), received: t0}, false, createOK, true},
		{"S3 down", answer{status: 503}, false, createFailed, false},
		{"S3 down after a lost attempt", answer{status: 503}, true, createUnknown, false},
		{"replayed after expiry", answer{status: 410}, true, createUnknown, false},
		{"gone without a lost attempt", answer{status: 410}, false, createFailed, true},
		{"internal error", answer{status: 500}, false, createFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, outcome, v := judgeCreate(c, tt.answer, tt.lost, t0)
			if outcome != tt.wantOutcome || (v != "") != tt.wantBad {
				t.Errorf("judgeCreate = %v, %q; want %v and a violation: %v", outcome, v, tt.wantOutcome, tt.wantBad)
			}
		})
	}
}
