package api_test

import (
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"pastebin/api"
	"pastebin/blob/blobtest"
	"pastebin/paste"
	"pastebin/store/storetest"
)

// withKeys makes the instance create for creator keys' holders only.
func withKeys() envOption {
	return withConfig(func(c *api.Config) { c.CreateAccess = paste.AccessKeys })
}

// minted is a key as POST /admin/keys answered it.
type minted struct {
	ID         int64  `json:"id"`
	Key        string `json:"key"`
	Label      string `json:"label"`
	CreateRate string `json:"create_rate"`
}

// mintKey mints a creator key through the admin API; rate "" is the default.
func (e *env) mintKey(label, rate string) minted {
	e.t.Helper()
	body, _ := json.Marshal(map[string]string{"label": label, "create_rate": rate})
	r := e.do(e.request(http.MethodPost, "/admin/keys", strings.NewReader(string(body)), append(adminAuth, "Content-Type", "application/json")...))
	var k minted
	if r.StatusCode != http.StatusCreated || json.Unmarshal(r.body, &k) != nil || !strings.HasPrefix(k.Key, paste.KeyPrefix) {
		e.t.Fatalf("mint a key: %d %s", r.StatusCode, r.body)
	}
	return k
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// revokeKey revokes the key through the admin API.
func (e *env) revokeKey(id int64) response {
	e.t.Helper()
	r := e.do(e.request(http.MethodDelete, "/admin/keys/"+strconv.FormatInt(id, 10)+"?reason=test", nil, adminAuth...))
	if r.StatusCode != http.StatusOK {
		e.t.Fatalf("revoke key %d: %d %s", id, r.StatusCode, r.body)
	}
	return r
}

// writes is a count of every row and object a create could write.
func (e *env) writes() string {
	e.t.Helper()
	return strconv.Itoa(e.count(`SELECT count(*) FROM pastes`)) + " pastes, " + strconv.Itoa(e.count(`SELECT count(*) FROM content`)) +
		" contents, " + strconv.Itoa(e.count(`SELECT count(*) FROM blob_outbox`)) + " outbox, " +
		strconv.Itoa(len(blobtest.Keys(e.t, e.bucket))) + " objects"
}

// createRequests are a create of content on every create route, with headers on each.
func (e *env) createRequests(content string, headers ...string) map[string]*http.Request {
	var form strings.Builder
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("content", content)
	_ = mw.Close()
	with := func(h ...string) []string { return append(append([]string{}, h...), headers...) }
	return map[string]*http.Request{
		"curl":     e.request(http.MethodPost, "/", strings.NewReader(content), headers...),
		"put":      e.request(http.MethodPut, "/file.txt", strings.NewReader(content), headers...),
		"json":     e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content": "`+content+`"}`), with("Content-Type", "application/json")...),
		"web form": e.request(http.MethodPost, "/", strings.NewReader(form.String()), with("Content-Type", mw.FormDataContentType(), "Accept", browserAccept)...),
		"haste":    e.request(http.MethodPost, "/documents", strings.NewReader(content), with("Content-Type", "text/plain")...),
	}
}

// TestCreatorKeyOnEveryCreateRoute: with PASTEBIN_CREATE_ACCESS=keys, every create route answers
// 401 creator-key-required without a key, with an unknown one and with a revoked one, and writes
// nothing, not even an upload; with a valid key each creates, and the paste records the key. Reads,
// the owner's delete and burns need no key.
func TestCreatorKeyOnEveryCreateRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withKeys())
	if r := e.get("/"); !strings.Contains(r.text(), "Authorization: Bearer <creator key>") {
		t.Errorf("the usage text does not say how to send a creator key:\n%s", r.body)
	}
	k, revoked := e.mintKey("ci", ""), e.mintKey("gone", "")
	e.revokeKey(revoked.ID)
	before := e.writes()
	for _, refused := range [][]string{nil, bearer("pbk_nobody"), bearer("not even a key"), bearer(revoked.Key)} {
		for name, req := range e.createRequests("keyed bytes", refused...) {
			r := e.do(req)
			if r.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s create with %v: %d %s", name, refused, r.StatusCode, r.body)
			} else if name != "web form" && problemType(t, r) != "/problems/creator-key-required" {
				t.Errorf("%s create with %v: %s", name, refused, r.body)
			} else if name == "web form" && refused == nil && !strings.Contains(r.text(), `name="creator_key"`) {
				t.Errorf("the web form refused for its key does not ask for one: %s", r.body)
			}
		}
	}
	if after := e.writes(); after != before {
		t.Errorf("refused creates wrote something: %s, then %s", before, after)
	}
	for name, req := range e.createRequests("keyed bytes", bearer(k.Key)...) {
		if r := e.send(req); r.StatusCode/100 != 2 && r.StatusCode != http.StatusSeeOther {
			t.Errorf("%s create with a key: %d %s", name, r.StatusCode, r.body)
		}
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE creator_key_id = $1`, k.ID); n != 5 {
		t.Errorf("%d pastes record the key, want the 5 created", n)
	}
	burn := e.do(e.request(http.MethodPost, "/?burn=true", strings.NewReader("once"), bearer(k.Key)...))
	lines := strings.Fields(burn.text())
	code := lines[0][strings.LastIndex(lines[0], "/")+1:]
	if r := e.do(e.request(http.MethodPost, "/raw/"+code, nil)); r.StatusCode != http.StatusOK {
		t.Errorf("a burn without a key: %d", r.StatusCode)
	}
	p := e.createWith("read me", bearer(k.Key))
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK {
		t.Errorf("a read without a key: %d", r.StatusCode)
	}
	if r := e.delete(p.code, p.token); r.StatusCode != http.StatusNoContent {
		t.Errorf("the owner's delete without a key: %d", r.StatusCode)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
}

// createWith creates content with curl's raw body and headers.
func (e *env) createWith(content string, headers []string) created {
	e.t.Helper()
	r := e.do(e.request(http.MethodPost, "/", strings.NewReader(content), headers...))
	lines := strings.Fields(r.text())
	if r.StatusCode != http.StatusCreated || len(lines) != 2 {
		e.t.Fatalf("create: %d %s", r.StatusCode, r.body)
	}
	return created{code: lines[0][strings.LastIndex(lines[0], "/")+1:], url: lines[0], token: lines[1]}
}

// TestCreatorKeyOnOpenInstance: an open instance creates without a key as before, records a key
// sent, refuses an unknown or revoked one (401) rather than create without it, and ignores a bearer
// token that is no creator key (pbk_...), as it did before keys.
func TestCreatorKeyOnOpenInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	k := e.mintKey("bot", "")
	e.create("anyone", "")
	e.createWith("keyed", bearer(k.Key))
	if n := e.count(`SELECT count(*) FROM pastes WHERE creator_key_id IS NULL`); n != 1 {
		t.Errorf("%d pastes without a key, want 1", n)
	}
	e.createWith("a bearer token that is no creator key is ignored here", bearer("an owner token"))
	e.revokeKey(k.ID)
	if r := e.do(e.request(http.MethodPost, "/", strings.NewReader("x"), bearer(k.Key)...)); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a revoked key on an open instance: %d", r.StatusCode)
	}
}

// TestCreatorKeyRate: a key's creates count against the key's own rate, across replicas, and not
// against its client's address: with the address allowed one create a minute, the key creates
// two, and a third is 429 on the other replica; the address still has its one.
func TestCreatorKeyRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withRates(api.Rate{Requests: 1, Window: 60e9}, api.Rate{}))
	other := e.replica()
	k := e.mintKey("two a minute", "2/1m")
	if k.CreateRate != "2/1m" {
		t.Errorf("create_rate %q", k.CreateRate)
	}
	e.createWith("one", bearer(k.Key))
	r := other.do(other.request(http.MethodPost, "/", strings.NewReader("two"), bearer(k.Key)...))
	if r.StatusCode != http.StatusCreated || r.Header.Get("X-RateLimit-Limit") != "2" {
		t.Fatalf("second create with the key: %d, limit %q", r.StatusCode, r.Header.Get("X-RateLimit-Limit"))
	}
	r = other.do(other.request(http.MethodPost, "/", strings.NewReader("three"), bearer(k.Key)...))
	if r.StatusCode != http.StatusTooManyRequests || !strings.Contains(r.text(), "creator key") {
		t.Errorf("third create with the key: %d %s", r.StatusCode, r.body)
	}
	e.create("the address's own", "")
	if r := e.do(e.request(http.MethodPost, "/", strings.NewReader("over"))); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the address's second create: %d", r.StatusCode)
	}
	for _, bad := range []string{"fast", "0/1m", "2/0s"} {
		body := `{"label": "x", "create_rate": "` + bad + `"}`
		if r := e.do(e.request(http.MethodPost, "/admin/keys", strings.NewReader(body), append(adminAuth, "Content-Type", "application/json")...)); r.StatusCode != http.StatusBadRequest {
			t.Errorf("create_rate %q: %d", bad, r.StatusCode)
		}
	}
}
