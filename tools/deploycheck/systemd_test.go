package deploycheck

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var systemdDir = filepath.Join(repoRoot, "deploy", "systemd")

// unitBinary is where the unit expects the pastebin binary (docs/scaling.md, "Deploying").
const unitBinary = "/usr/local/bin/pastebin"

// systemdAnalyze finds systemd-analyze. make test installs Debian's systemd when it is missing
// (scripts/services.sh tool systemd-analyze); without it this fails, never skips.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing: run make test, which installs it (Debian's systemd package)")
	}
	return p
}

// unitForTest is the unit with its binary at the path of one just built: systemd-analyze verify
// checks that every command it runs exists and is executable.
func unitForTest(t *testing.T) string {
	t.Helper()
	unit, err := os.ReadFile(filepath.Join(systemdDir, "pastebin.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte(unitBinary)) {
		t.Fatalf("the unit runs no %s", unitBinary)
	}
	path := filepath.Join(t.TempDir(), "pastebin.service")
	unit = bytes.ReplaceAll(unit, []byte(unitBinary), []byte(pastebinBinary(t)))
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSystemdUnitVerifies: systemd-analyze verify accepts the unit without a word (an unknown or
// misspelt directive is a warning it prints), and its offline security review rates it OK.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, unit := systemdAnalyze(t), unitForTest(t)
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// 19: an exposure of 1.9 at most, which systemd-analyze calls OK.
	out, err = exec.Command(analyze, "security", "--offline=true", "--threshold=19", unit).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: %v\n%s", err, out)
	}
}

// TestSystemdUnitIsHardened: the unit runs as a user of its own on a read-only system with a
// state folder to write in, migrates before it serves, and reads its settings from a file.
func TestSystemdUnitIsHardened(t *testing.T) {
	unit := unitDirectives(t, filepath.Join(systemdDir, "pastebin.service"))
	for _, want := range []string{
		"DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory=pastebin",
		"Environment=PASTEBIN_EMBEDDED_S3_DIR=/var/lib/pastebin/s3", "EnvironmentFile=/etc/pastebin/pastebin.env",
		"ExecStartPre=" + unitBinary + " migrate up", "ExecStart=" + unitBinary + " serve",
	} {
		if !unit[want] {
			t.Errorf("the unit has no %s", want)
		}
	}
}

// TestSystemdStopFitsTheDrain: TimeoutStopSec outlasts the drain, the shutdown timeout and a
// cleanup batch, as pastebin.env sets them (docs/scaling.md, "Shutdown").
func TestSystemdStopFitsTheDrain(t *testing.T) {
	env := envFile(t, filepath.Join(systemdDir, "pastebin.env"))
	var stop time.Duration
	for d := range unitDirectives(t, filepath.Join(systemdDir, "pastebin.service")) {
		if v, ok := strings.CutPrefix(d, "TimeoutStopSec="); ok {
			stop = parseDuration(t, v)
		}
	}
	drain, shutdown := parseDuration(t, env["PASTEBIN_DRAIN_DELAY"]), parseDuration(t, env["PASTEBIN_SHUTDOWN_TIMEOUT"])
	if stop < drain+shutdown+batchMargin {
		t.Errorf("TimeoutStopSec %v: under the drain %v + shutdown %v + a batch %v", stop, drain, shutdown, batchMargin)
	}
}

// unitDirectives are the unit's lines, as Key=value.
func unitDirectives(t *testing.T, path string) map[string]bool {
	t.Helper()
	set := map[string]bool{}
	for _, line := range fileLines(t, path) {
		set[line] = true
	}
	return set
}

// envFile reads an EnvironmentFile of plain KEY=value lines.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, line := range fileLines(t, path) {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is no KEY=value", path, line)
		}
		env[k] = v
	}
	return env
}

// fileLines are the lines of path that are neither empty nor comments, trimmed.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && l[0] != '#' && l[0] != ';' {
			lines = append(lines, l)
		}
	}
	return lines
}

func parseDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}
