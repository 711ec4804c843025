package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestUnblockNeedsAReason: an unblock, from the JSON API or the console's button, needs a reason of
// at most 1000 bytes, as takedowns and blocks do; without one nothing changes and nothing is
// recorded, and with one the audit log keeps it.
func TestUnblockNeedsAReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	auth := []string{"Authorization", "Bearer " + adminToken}
	sum := sha256.Sum256([]byte("blocked for a reason"))
	hash := hex.EncodeToString(sum[:])
	block := e.do(e.request(http.MethodPost, "/admin/blocked", strings.NewReader(`{"content_hash": "`+hash+`", "reason": "malware"}`),
		append(auth, "Content-Type", "application/json")...))
	if block.StatusCode != http.StatusCreated {
		t.Fatalf("block: %d %s", block.StatusCode, block.body)
	}
	long := strings.Repeat("x", 1001)
	for _, reason := range []string{"", " ", long} {
		r := e.do(e.request(http.MethodDelete, "/admin/blocked/"+hash+"?reason="+url.QueryEscape(reason), nil, auth...))
		if r.StatusCode != http.StatusBadRequest || problemType(t, r) != "/problems/malformed-request" {
			t.Errorf("API unblock with a reason of %d bytes: %d %s, want 400", len(reason), r.StatusCode, r.body)
		}
	}
	s := e.signIn(adminToken)
	for _, reason := range []string{"", " ", long} {
		r := e.form("/admin/blocked/"+hash+"/unblock", url.Values{"csrf": {s.csrf}, "reason": {reason}}, "Cookie", s.cookie)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.text(), "reason") {
			t.Errorf("console unblock with a reason of %d bytes: %d, want 400 naming the reason", len(reason), r.StatusCode)
		}
	}
	if n := e.count(`SELECT count(*) FROM blocked_content`); n != 1 {
		t.Fatalf("refused unblocks unblocked: %d blocked, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM admin_audit WHERE action = 'unblock'`); n != 0 {
		t.Errorf("refused unblocks were recorded: %d", n)
	}
	page := e.page("/admin/blocked", "Cookie", s.cookie).text()
	if !strings.Contains(page, `name="reason" type="text" required maxlength="1000" placeholder="Reason" aria-label="Reason to unblock `+hash) {
		t.Error("the blocked list's unblock button asks for no reason")
	}
	r := e.form("/admin/blocked/"+hash+"/unblock", url.Values{"csrf": {s.csrf}, "reason": {"appeal upheld"}}, "Cookie", s.cookie)
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "no longer blocked") {
		t.Errorf("console unblock with a reason: %d", r.StatusCode)
	}
	if n := e.count(`SELECT count(*) FROM admin_audit WHERE action = 'unblock' AND via = 'console' AND reason = 'appeal upheld'`); n != 1 {
		t.Errorf("%d console unblocks with their reason in the audit log, want 1", n)
	}
}
