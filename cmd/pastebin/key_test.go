package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestKeyCommands: on an instance where only key holders create, key create prints a key that put
// then creates with (PASTEBIN_CREATOR_KEY), while put without one is refused; key list shows the key
// without its secret; key takedown takes down what it created; key revoke makes put fail again.
func TestKeyCommands(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["PASTEBIN_CREATE_ACCESS"] = "keys"
	base, stop := startServe(t, env)
	defer stop()
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	cmd := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(ctx, append([]string{"pastebin"}, args...), getenv, &out)
		return out.String(), err
	}
	put := func(key string) error {
		putEnv := map[string]string{"PASTEBIN_SERVER": base, "PASTEBIN_CREATOR_KEY": key}
		var out, errOut bytes.Buffer
		return runPut(ctx, []string{"-"}, func(k string) string { return putEnv[k] },
			clientIO{in: strings.NewReader("from put " + key), out: &out, err: &errOut})
	}

	out, err := cmd("key", "create", "-label", "ci runner", "-json")
	var k struct {
		ID  int64  `json:"id"`
		Key string `json:"key"`
	}
	if err != nil || json.Unmarshal([]byte(out), &k) != nil || !strings.HasPrefix(k.Key, "pbk_") {
		t.Fatalf("key create: %v %s", err, out)
	}
	if err := put(""); err == nil || !strings.Contains(err.Error(), "creator key") {
		t.Errorf("put without a key: %v", err)
	}
	if err := put(k.Key); err != nil {
		t.Fatalf("put with the key: %v", err)
	}
	out, err = cmd("key", "list")
	if err != nil || !strings.Contains(out, "ci runner") || strings.Contains(out, k.Key) || !strings.Contains(out, "active") {
		t.Errorf("key list: %v\n%s", err, out)
	}
	id := strconv.FormatInt(k.ID, 10)
	out, err = cmd("key", "takedown", id, "-reason", "leaked", "-json")
	if err != nil || !strings.Contains(out, `"pastes_taken_down":1`) {
		t.Errorf("key takedown: %v %s", err, out)
	}
	if out, err := cmd("key", "revoke", id); err != nil || !strings.Contains(out, "revoked (now: true)") {
		t.Errorf("key revoke: %v %s", err, out)
	}
	if err := put(k.Key); err == nil {
		t.Error("put with a revoked key succeeded")
	}
	for _, bad := range [][]string{{"key"}, {"key", "create"}, {"key", "revoke", "x"}, {"key", "takedown", id}, {"key", "rotate"}} {
		if _, err := cmd(bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	out, _ = cmd("key", "list", "-json")
	if !strings.Contains(out, `"revoked_at":"`) {
		t.Errorf("key list after the revocation: %s", out)
	}
}
