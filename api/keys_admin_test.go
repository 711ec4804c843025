package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCreatorKeyAdminAPI: minting answers the secret once; the list, the audit log and the server's
// logs never hold it; a key's pastes page with a cursor; revocation is idempotent; bad requests are
// 400, 401 or 404 problems, never 500.
func TestCreatorKeyAdminAPI(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := newEnv(t, withAdmin(adminToken, 1), withKeys(),
		withLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	k := e.mintKey("laptop of ana", "")
	if k.CreateRate != "120/1m" {
		t.Errorf("default create_rate %q, want 120/1m", k.CreateRate)
	}
	id := strconv.FormatInt(k.ID, 10)
	var codes []string
	for _, c := range []string{"a", "b", "c"} {
		codes = append(codes, e.createWith(c, bearer(k.Key)).code)
	}
	e.do(e.request(http.MethodPost, "/", strings.NewReader("nope"), bearer(k.Key+"x")...))

	list := e.get("/admin/keys", adminAuth...)
	var got struct {
		Keys []struct {
			ID         int64   `json:"id"`
			Label      string  `json:"label"`
			Pastes     int     `json:"pastes"`
			LastUsedAt *string `json:"last_used_at"`
			RevokedAt  *string `json:"revoked_at"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(list.body, &got); err != nil || len(got.Keys) != 1 || got.Keys[0].Pastes != 3 ||
		got.Keys[0].LastUsedAt == nil || got.Keys[0].RevokedAt != nil || got.Keys[0].Label != "laptop of ana" {
		t.Errorf("key list: %d %s", list.StatusCode, list.body)
	}
	page := e.get("/admin/keys/"+id+"/pastes?limit=2", adminAuth...)
	var p1 struct {
		Pastes []struct{ Code string } `json:"pastes"`
		Next   *string                 `json:"next_cursor"`
	}
	if err := json.Unmarshal(page.body, &p1); err != nil || len(p1.Pastes) != 2 || p1.Next == nil || p1.Pastes[0].Code != codes[2] {
		t.Fatalf("first page of the key's pastes: %d %s", page.StatusCode, page.body)
	}
	page = e.get("/admin/keys/"+id+"/pastes?limit=2&cursor="+url.QueryEscape(*p1.Next), adminAuth...)
	var p2 struct {
		Pastes []struct{ Code string } `json:"pastes"`
		Next   *string                 `json:"next_cursor"`
	}
	if err := json.Unmarshal(page.body, &p2); err != nil || len(p2.Pastes) != 1 || p2.Next != nil || p2.Pastes[0].Code != codes[0] {
		t.Errorf("second page of the key's pastes: %d %s", page.StatusCode, page.body)
	}

	if r := e.revokeKey(k.ID); !strings.Contains(r.text(), `"revoked_now":true`) || !strings.Contains(r.text(), `"pastes":3`) {
		t.Errorf("revoke: %s", r.body)
	}
	if r := e.revokeKey(k.ID); !strings.Contains(r.text(), `"revoked_now":false`) {
		t.Errorf("revoke again: %s", r.body)
	}
	r := e.do(e.request(http.MethodPost, "/admin/keys/"+id+"/takedown?reason=abuse&legal=true", nil, adminAuth...))
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `"pastes_taken_down":3`) {
		t.Errorf("takedown by key: %d %s", r.StatusCode, r.body)
	}
	if r := e.get("/raw/" + codes[1]); r.StatusCode != http.StatusUnavailableForLegalReasons {
		t.Errorf("a paste of a key taken down for legal reasons: %d", r.StatusCode)
	}
	audit := e.get("/admin/audit", adminAuth...).text()
	for _, action := range []string{"key-create", "key-revoke", "key-takedown"} {
		if !strings.Contains(audit, `"action":"`+action+`"`) {
			t.Errorf("the audit log lacks %s", action)
		}
	}
	for what, text := range map[string]string{"the key list": list.text(), "the audit log": audit, "the server's logs": logs.String()} {
		if strings.Contains(text, k.Key) || strings.Contains(text, k.Key[len(k.Key)-20:]) {
			t.Errorf("%s holds the key's secret", what)
		}
	}

	json := []string{"Content-Type", "application/json"}
	for _, tt := range []struct {
		name, method, path, body string
		auth                     []string
		want                     int
	}{
		{"mint without a token", http.MethodPost, "/admin/keys", `{"label": "x"}`, json, http.StatusUnauthorized},
		{"list without a token", http.MethodGet, "/admin/keys", "", nil, http.StatusUnauthorized},
		{"revoke without a token", http.MethodDelete, "/admin/keys/" + id, "", nil, http.StatusUnauthorized},
		{"mint without a label", http.MethodPost, "/admin/keys", `{"label": " "}`, append(adminAuth, json...), http.StatusBadRequest},
		{"mint with a long label", http.MethodPost, "/admin/keys", `{"label": "` + strings.Repeat("x", 201) + `"}`, append(adminAuth, json...), http.StatusBadRequest},
		{"mint with an unknown field", http.MethodPost, "/admin/keys", `{"label": "x", "admin": true}`, append(adminAuth, json...), http.StatusBadRequest},
		{"mint with no JSON", http.MethodPost, "/admin/keys", `label=x`, append(adminAuth, json...), http.StatusBadRequest},
		{"revoke an unknown key", http.MethodDelete, "/admin/keys/99999", "", adminAuth, http.StatusNotFound},
		{"revoke a malformed id", http.MethodDelete, "/admin/keys/abc", "", adminAuth, http.StatusNotFound},
		{"revoke with a long reason", http.MethodDelete, "/admin/keys/" + id + "?reason=" + strings.Repeat("r", 1001), "", adminAuth, http.StatusBadRequest},
		{"take down without a reason", http.MethodPost, "/admin/keys/" + id + "/takedown", "", adminAuth, http.StatusBadRequest},
		{"take down an unknown key", http.MethodPost, "/admin/keys/99999/takedown?reason=x", "", adminAuth, http.StatusNotFound},
		{"pastes of an unknown key", http.MethodGet, "/admin/keys/99999/pastes", "", adminAuth, http.StatusNotFound},
		{"pastes with a forged cursor", http.MethodGet, "/admin/keys/" + id + "/pastes?cursor=AAAA", "", adminAuth, http.StatusBadRequest},
		{"pastes with a bad limit", http.MethodGet, "/admin/keys/" + id + "/pastes?limit=0", "", adminAuth, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := e.do(e.request(tt.method, tt.path, strings.NewReader(tt.body), tt.auth...)); r.StatusCode != tt.want {
				t.Errorf("got %d, want %d: %s", r.StatusCode, tt.want, r.body)
			} else if r.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("answered %q, want problem details", r.Header.Get("Content-Type"))
			}
		})
	}
}

var mintedKey = regexp.MustCompile(`id="minted-key">(pbk_[A-Za-z0-9_-]+)<`)

// TestCreatorKeyConsole: the console mints a key and shows its secret once, lists the keys, shows
// a key's pastes, takes them all down (revoking the key with them), and revokes; bad ids are 404
// pages, a form without the session's token is refused.
func TestCreatorKeyConsole(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withKeys())
	s := e.signIn(adminToken)
	r := e.form("/admin/keys", url.Values{"csrf": {s.csrf}, "label": {"ci runner"}, "create_rate": {"10/1m"}}, "Cookie", s.cookie)
	m := mintedKey.FindStringSubmatch(r.text())
	if r.StatusCode != http.StatusCreated || m == nil {
		t.Fatalf("mint form: %d, secret shown: %v", r.StatusCode, m != nil)
	}
	checkPageHeaders(t, r, "no-store")
	secret := m[1]
	if r := e.form("/admin/keys", url.Values{"csrf": {s.csrf}, "label": {""}}, "Cookie", s.cookie); r.StatusCode != http.StatusBadRequest ||
		!strings.Contains(r.text(), "label") {
		t.Errorf("mint form without a label: %d", r.StatusCode)
	}
	if r := e.form("/admin/keys", url.Values{"csrf": {"forged"}, "label": {"x"}}, "Cookie", s.cookie); r.StatusCode != http.StatusForbidden {
		t.Errorf("mint form with a forged form token: %d", r.StatusCode)
	}
	one, two := e.createWith("console one", bearer(secret)), e.createWith("console two", bearer(secret))
	list := e.page("/admin/keys", "Cookie", s.cookie)
	if list.StatusCode != http.StatusOK || strings.Contains(list.text(), secret) || !strings.Contains(list.text(), "ci runner") ||
		!strings.Contains(list.text(), "10/1m") {
		t.Errorf("keys page: %d, or it shows the secret", list.StatusCode)
	}
	id := regexp.MustCompile(`href="/admin/keys/(\d+)/pastes"`).FindStringSubmatch(list.text())
	if id == nil {
		t.Fatalf("keys page links no key")
	}
	key := e.page("/admin/keys/"+id[1]+"/pastes", "Cookie", s.cookie)
	if key.StatusCode != http.StatusOK || !strings.Contains(key.text(), one.code) || !strings.Contains(key.text(), two.code) {
		t.Errorf("key page: %d, lists both pastes: %v", key.StatusCode, strings.Contains(key.text(), one.code))
	}
	checkPageHeaders(t, key, "no-store")
	r = e.form("/admin/keys/"+id[1]+"/takedown", url.Values{"csrf": {s.csrf}, "reason": {"abuse"}, "revoke": {"true"}}, "Cookie", s.cookie)
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "2 pastes of this key taken down") || !strings.Contains(r.text(), "revoked") {
		t.Errorf("takedown form: %d", r.StatusCode)
	}
	if r := e.get("/raw/" + one.code); r.StatusCode != http.StatusGone {
		t.Errorf("a paste after the takedown form: %d", r.StatusCode)
	}
	if r := e.do(e.request(http.MethodPost, "/", strings.NewReader("after"), bearer(secret)...)); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a create with the key revoked by the takedown form: %d", r.StatusCode)
	}
	r = e.form("/admin/keys/"+id[1]+"/revoke", url.Values{"csrf": {s.csrf}}, "Cookie", s.cookie)
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "revoked already") {
		t.Errorf("revoke form: %d", r.StatusCode)
	}
	for _, path := range []string{"/admin/keys/99999/pastes", "/admin/keys/x/pastes"} {
		if r := e.page(path, "Cookie", s.cookie); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", path, r.StatusCode)
		}
	}
	if r := e.form("/admin/keys/99999/revoke", url.Values{"csrf": {s.csrf}}, "Cookie", s.cookie); r.StatusCode != http.StatusNotFound {
		t.Errorf("revoke form of an unknown key: %d", r.StatusCode)
	}
	if r := e.browse("/admin/keys"); r.StatusCode != http.StatusSeeOther {
		t.Errorf("keys page without a session: %d", r.StatusCode)
	}
}

var keyField = `name="creator_key"`

// TestCreatorKeyWebForm: the create form asks for a key on an instance that needs one, keeps the
// one typed in an HttpOnly cookie and asks no more; a wrong key shows the form again asking for one
// (401) and writes nothing; once the kept key is revoked, the form forgets it and asks again.
func TestCreatorKeyWebForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withKeys())
	k := e.mintKey("browser", "")
	if r := e.page("/"); !strings.Contains(r.text(), keyField) {
		t.Fatalf("the form does not ask for a key")
	}
	post := func(values url.Values, headers ...string) response {
		return e.send(e.request(http.MethodPost, "/", strings.NewReader(values.Encode()), append([]string{
			"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept, "Sec-Fetch-Site", "same-origin"}, headers...)...))
	}
	r := post(url.Values{"content": {"typo"}, "creator_key": {"pbk_wrong"}})
	if r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.text(), keyField) || !strings.Contains(r.text(), "typo") {
		t.Errorf("a wrong key: %d, asks again: %v", r.StatusCode, strings.Contains(r.text(), keyField))
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 0 {
		t.Errorf("a wrong key wrote %d pastes", n)
	}
	r = post(url.Values{"content": {"first"}, "creator_key": {" " + k.Key + " "}})
	var kept *http.Cookie
	for _, c := range r.Cookies() {
		if c.Name == "creator_key" {
			kept = c
		}
	}
	if r.StatusCode != http.StatusSeeOther || kept == nil || kept.Value != k.Key || !kept.HttpOnly || kept.SameSite != http.SameSiteStrictMode || kept.MaxAge < 86400 {
		t.Fatalf("first create: %d, kept %+v", r.StatusCode, kept)
	}
	cookie := "creator_key=" + kept.Value
	if r := e.page("/", "Cookie", cookie); strings.Contains(r.text(), keyField) {
		t.Errorf("the form asks again for the key the browser keeps")
	}
	if r := post(url.Values{"content": {"second"}}, "Cookie", cookie); r.StatusCode != http.StatusSeeOther {
		t.Errorf("a create with the kept key: %d %s", r.StatusCode, r.body)
	}
	e.revokeKey(k.ID)
	r = post(url.Values{"content": {"third"}}, "Cookie", cookie)
	cleared := false
	for _, c := range r.Cookies() {
		cleared = cleared || c.Name == "creator_key" && c.MaxAge < 0
	}
	if r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.text(), keyField) || !cleared {
		t.Errorf("a create with a kept key since revoked: %d, asks again %v, cookie cleared %v", r.StatusCode, strings.Contains(r.text(), keyField), cleared)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE creator_key_id = $1`, k.ID); n != 2 {
		t.Errorf("%d pastes of the key, want 2", n)
	}
}
