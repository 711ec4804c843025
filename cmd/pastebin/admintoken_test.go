package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAdminTokenRules: serve refuses the README's old example token (by name, and as its hash) and
// any token under 16 characters, and warns at start-up about one under 32.
func TestAdminTokenRules(t *testing.T) {
	t.Parallel()
	example := sha256.Sum256([]byte("a-long-random-admin-token"))
	for _, tt := range []struct {
		name, env, value, want string
	}{
		{"the README's old example", "PASTEBIN_ADMIN_TOKEN", "a-long-random-admin-token", "openssl rand -hex 32"},
		{"the example's hash", "PASTEBIN_ADMIN_TOKEN_SHA256", hex.EncodeToString(example[:]), "example"},
		{"15 characters", "PASTEBIN_ADMIN_TOKEN", strings.Repeat("x", 15), "at least 16 characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Refused before any connection; were it not, the connection goes nowhere.
			env := map[string]string{tt.env: tt.value, "PASTEBIN_DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?connect_timeout=1"}
			err := run(context.Background(), []string{"pastebin", "serve"}, func(k string) string { return env[k] }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		token string
		warns bool
	}{
		{strings.Repeat("y", 16), true},
		{strings.Repeat("z", 31), true},
		{strings.Repeat("0123456789abcdef", 4), false}, // what `openssl rand -hex 32` gives
	} {
		env := testEnv(t)
		env["PASTEBIN_ADMIN_TOKEN"] = tt.token
		log := startUpLog(t, env)
		if got := strings.Contains(log, "fewer than 32"); got != tt.warns {
			t.Errorf("a token of %d characters: warned %v, want %v\n%s", len(tt.token), got, tt.warns, log)
		}
		if strings.Contains(log, tt.token) {
			t.Errorf("the admin token is in the log:\n%s", log)
		}
	}
}

// startUpLog runs serve until it serves, stops it, and returns what it logged.
func startUpLog(t *testing.T, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"pastebin", "serve"}, func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	var log strings.Builder
	serving, scanned := make(chan struct{}), make(chan struct{})
	var once sync.Once
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.Write(sc.Bytes())
			log.WriteByte('\n')
			var line struct{ Msg string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				once.Do(func() { close(serving) })
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case <-serving:
	case err := <-done:
		t.Fatalf("serve stopped at start-up: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start within 30s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	<-scanned
	return log.String()
}
