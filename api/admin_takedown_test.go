package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"pastebin/blob/blobtest"
	"pastebin/store/storetest"
)

var adminAuth = []string{"Authorization", "Bearer " + adminToken}

// problemType reads the type of a problem answer.
func problemType(t *testing.T, r response) string {
	t.Helper()
	var p struct{ Type string }
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("not a problem: %d %s", r.StatusCode, r.body)
	}
	return p.Type
}

// TestTakedownAnswersReaders takes down a paste that readers have in the cache: every read path
// answers 410 with the taken-down type at once, or 451 for a legal takedown; a retry answers the
// same and changes nothing; reference counts and the bucket stay consistent.
func TestTakedownAnswersReaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	spam, legal, twin := e.create("buy now", ""), e.create("secret", ""), e.create("buy now", "")
	for _, p := range []created{spam, legal} {
		if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK || !e.cached(p.code) {
			t.Fatalf("read before the takedown: %d, cached %v", r.StatusCode, e.cached(p.code))
		}
	}
	r := e.do(e.request(http.MethodDelete, "/admin/pastes/"+spam.code+"?reason=spam", nil, adminAuth...))
	var got struct {
		TakenDown       bool `json:"taken_down"`
		PastesTakenDown int  `json:"pastes_taken_down"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || r.StatusCode != http.StatusOK || !got.TakenDown || got.PastesTakenDown != 1 {
		t.Fatalf("takedown: %d %s", r.StatusCode, r.body)
	}
	body := strings.NewReader(`{"reason": "court order 12/2025", "legal": true}`)
	if r := e.do(e.request(http.MethodDelete, "/admin/pastes/"+legal.code, body, append(adminAuth, "Content-Type", "application/json")...)); r.StatusCode != http.StatusOK {
		t.Fatalf("legal takedown: %d %s", r.StatusCode, r.body)
	}
	// The owner's delete, after the takedown, changes nothing, and readers still learn why it went.
	if r := e.delete(legal.code, legal.token); r.StatusCode != http.StatusNoContent {
		t.Errorf("the owner's delete of a paste taken down: %d", r.StatusCode)
	}
	for _, path := range []string{"/raw/", "/", "/api/v1/pastes/"} {
		if r := e.get(path + spam.code); r.StatusCode != http.StatusGone || problemType(t, r) != "/problems/taken-down" {
			t.Errorf("GET %s after a takedown: %d %s", path, r.StatusCode, r.body)
		}
		if r := e.get(path + legal.code); r.StatusCode != http.StatusUnavailableForLegalReasons || problemType(t, r) != "/problems/unavailable-for-legal-reasons" {
			t.Errorf("GET %s after a legal takedown: %d %s", path, r.StatusCode, r.body)
		}
	}
	if r := e.page("/" + legal.code); r.StatusCode != http.StatusUnavailableForLegalReasons || !strings.Contains(r.text(), "legal reasons") {
		t.Errorf("the page of a legal takedown: %d", r.StatusCode)
	}
	if r := e.get("/raw/" + twin.code); r.StatusCode != http.StatusOK {
		t.Errorf("a paste sharing the content, not taken down: %d", r.StatusCode)
	}
	again := e.do(e.request(http.MethodDelete, "/admin/pastes/"+spam.code+"?reason=spam", nil, adminAuth...))
	if again.StatusCode != http.StatusOK || !strings.Contains(again.text(), `"taken_down":false`) {
		t.Errorf("retried takedown: %d %s", again.StatusCode, again.body)
	}
	if n := e.refCount("buy now"); n != 1 {
		t.Errorf("ref_count %d after one of two pastes was taken down, twice; want 1", n)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
}

func TestTakedownRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	p := e.create("kept", "")
	for _, tt := range []struct {
		name, path string
		auth       []string
		want       int
	}{
		{"no token", "/admin/pastes/" + p.code + "?reason=x", nil, http.StatusUnauthorized},
		{"no reason", "/admin/pastes/" + p.code, adminAuth, http.StatusBadRequest},
		{"blank reason", "/admin/pastes/" + p.code + "?reason=%20", adminAuth, http.StatusBadRequest},
		{"bad flag", "/admin/pastes/" + p.code + "?reason=x&legal=maybe", adminAuth, http.StatusBadRequest},
		{"unknown code", "/admin/pastes/AAAAAAAAAAA?reason=x", adminAuth, http.StatusNotFound},
		{"malformed code", "/admin/pastes/nope?reason=x", adminAuth, http.StatusNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := e.do(e.request(http.MethodDelete, tt.path, nil, tt.auth...)); r.StatusCode != tt.want {
				t.Errorf("got %d, want %d: %s", r.StatusCode, tt.want, r.body)
			}
		})
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK {
		t.Errorf("a refused takedown took the paste down: %d", r.StatusCode)
	}
}

// TestBlockedContentRefusedOnEveryCreateRoute blocks content by a paste's code, taking down every
// paste of it, then tries to store it again on every create route: each answers 451 with the
// content-blocked type and nothing is written, not even an upload.
func TestBlockedContentRefusedOnEveryCreateRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	const content = "blocked bytes"
	a, b := e.create(content, ""), e.create(content, "")
	r := e.do(e.request(http.MethodPost, "/admin/blocked", strings.NewReader(`{"code": "`+a.code+`", "reason": "malware", "take_down": true}`),
		append(adminAuth, "Content-Type", "application/json")...))
	if r.StatusCode != http.StatusCreated || !strings.Contains(r.text(), `"pastes_taken_down":2`) {
		t.Fatalf("block: %d %s", r.StatusCode, r.body)
	}
	for _, code := range []string{a.code, b.code} {
		if r := e.get("/raw/" + code); r.StatusCode != http.StatusGone {
			t.Errorf("a paste of blocked content: %d", r.StatusCode)
		}
	}
	before := e.count(`SELECT count(*) FROM pastes`) + 100*e.count(`SELECT count(*) FROM content`) + 10000*e.count(`SELECT count(*) FROM blob_outbox`)
	keys := len(blobtest.Keys(t, e.bucket))
	var form strings.Builder
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("content", content)
	_ = mw.Close()
	for name, req := range map[string]*http.Request{
		"curl":     e.request(http.MethodPost, "/", strings.NewReader(content)),
		"put":      e.request(http.MethodPut, "/file.txt", strings.NewReader(content)),
		"json":     e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content": "`+content+`"}`), "Content-Type", "application/json"),
		"web form": e.request(http.MethodPost, "/", strings.NewReader(form.String()), "Content-Type", mw.FormDataContentType(), "Accept", browserAccept),
		"haste":    e.request(http.MethodPost, "/documents", strings.NewReader(content), "Content-Type", "text/plain"),
	} {
		r := e.do(req)
		if r.StatusCode != http.StatusUnavailableForLegalReasons {
			t.Errorf("%s create of blocked content: %d %s", name, r.StatusCode, r.body)
		} else if name != "web form" && problemType(t, r) != "/problems/content-blocked" {
			t.Errorf("%s create of blocked content: %s", name, r.body)
		}
	}
	after := e.count(`SELECT count(*) FROM pastes`) + 100*e.count(`SELECT count(*) FROM content`) + 10000*e.count(`SELECT count(*) FROM blob_outbox`)
	if after != before || len(blobtest.Keys(t, e.bucket)) != keys {
		t.Errorf("refused creates wrote something: rows %d then %d, objects %d then %d", before, after, keys, len(blobtest.Keys(t, e.bucket)))
	}

	hash := sha256.Sum256([]byte(content))
	list := e.get("/admin/blocked", adminAuth...)
	if !strings.Contains(list.text(), hex.EncodeToString(hash[:])) {
		t.Errorf("the blocked list lacks the content: %s", list.body)
	}
	r = e.do(e.request(http.MethodDelete, "/admin/blocked/"+hex.EncodeToString(hash[:])+"?reason=appeal", nil, adminAuth...))
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `"removed":true`) {
		t.Fatalf("unblock: %d %s", r.StatusCode, r.body)
	}
	e.create(content, "") // stored again
}

func TestBlockRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	p := e.create("owner deletes it", "")
	if r := e.delete(p.code, p.token); r.StatusCode != http.StatusNoContent {
		t.Fatal(r.StatusCode)
	}
	h := strings.Repeat("ab", 32)
	for _, tt := range []struct {
		name, body string
		want       int
	}{
		{"by hash", `{"content_hash": "` + h + `", "reason": "r"}`, http.StatusCreated},
		{"again", `{"content_hash": "` + strings.ToUpper(h) + `", "reason": "r"}`, http.StatusOK},
		{"both", `{"content_hash": "` + h + `", "code": "` + p.code + `", "reason": "r"}`, http.StatusBadRequest},
		{"neither", `{"reason": "r"}`, http.StatusBadRequest},
		{"short hash", `{"content_hash": "abcd", "reason": "r"}`, http.StatusBadRequest},
		{"no reason", `{"content_hash": "` + h + `"}`, http.StatusBadRequest},
		{"unknown field", `{"content_hash": "` + h + `", "reason": "r", "why": 1}`, http.StatusBadRequest},
		{"deleted paste", `{"code": "` + p.code + `", "reason": "r"}`, http.StatusConflict},
		{"unknown paste", `{"code": "AAAAAAAAAAA", "reason": "r"}`, http.StatusNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(e.request(http.MethodPost, "/admin/blocked", strings.NewReader(tt.body), append(adminAuth, "Content-Type", "application/json")...))
			if r.StatusCode != tt.want {
				t.Errorf("got %d, want %d: %s", r.StatusCode, tt.want, r.body)
			}
		})
	}
}

// TestAuditLogPages: every admin action is in the log, newest first, with the credential's
// fingerprint and never the token; pages follow each other by their next link.
func TestAuditLogPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	p := e.create("audited", "")
	e.do(e.request(http.MethodDelete, "/admin/pastes/"+p.code+"?reason=one&block=true", nil, adminAuth...))
	e.do(e.request(http.MethodPost, "/admin/cleanup", nil, adminAuth...))
	e.do(e.request(http.MethodDelete, "/admin/blocked/"+strings.Repeat("0", 64)+"?reason=three", nil, adminAuth...))
	var actions []string
	next := "/admin/audit?limit=2"
	for i := 0; next != "" && i < 5; i++ {
		r := e.get(next, adminAuth...)
		var page struct {
			Entries []struct{ Action, Actor, Via, Reason string }
			Next    string
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, r.StatusCode, r.body)
		}
		for _, en := range page.Entries {
			actions = append(actions, en.Action)
			if !strings.HasPrefix(en.Actor, "token:") || en.Via != "api" || strings.Contains(string(r.body), adminToken) {
				t.Errorf("entry %+v: want the token's fingerprint through the api", en)
			}
		}
		next = page.Next
	}
	if got := strings.Join(actions, " "); got != "unblock cleanup takedown" {
		t.Errorf("audit log, newest first: %q, want %q", got, "unblock cleanup takedown")
	}
	if r := e.get("/admin/audit?before=x", adminAuth...); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed before: %d", r.StatusCode)
	}
}
