package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pastebin/blob/blobtest"
	"pastebin/paste"
	"pastebin/store/storetest"
)

// keyedCreates runs workers goroutines against servers, each creating with key until stop is
// closed or it is refused, and collects what each create was answered.
type keyedCreates struct {
	mu      sync.Mutex
	created []string // codes answered 201
	refused int      // creates answered 401
	other   []string // anything else
	wg      sync.WaitGroup
}

func (kc *keyedCreates) run(t *testing.T, servers []*env, workers int, key string, content func(w, i int) string, stop <-chan struct{}, untilRefused bool) {
	for w := range workers {
		kc.wg.Add(1)
		go func() {
			defer kc.wg.Done()
			srv := servers[w%len(servers)]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, status, body := createRaw(srv, content(w, i), key)
				kc.mu.Lock()
				switch status {
				case http.StatusCreated:
					kc.created = append(kc.created, code)
				case http.StatusUnauthorized:
					kc.refused++
				default:
					kc.other = append(kc.other, fmt.Sprintf("%d %s", status, body))
				}
				kc.mu.Unlock()
				if status != http.StatusCreated && untilRefused {
					return
				}
			}
		}()
	}
}

// createRaw creates content with a key, without failing the test from a goroutine.
func createRaw(e *env, content, key string) (string, int, string) {
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/", strings.NewReader(content))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		return "", 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	lines := strings.Fields(b.String())
	if resp.StatusCode != http.StatusCreated || len(lines) != 2 {
		return "", resp.StatusCode, b.String()
	}
	return lines[0][strings.LastIndex(lines[0], "/")+1:], resp.StatusCode, ""
}

// TestCreatorKeyRevocationRace: many goroutines create with a key, on two replicas, while it is
// revoked. The revocation answers how many pastes the key had when it committed; afterwards the key
// has exactly that many, and exactly the creates answered 201: no create committed after the
// revocation. Every refused create wrote nothing, in the database or the bucket (a create that got
// past the other replica's cache of the key and uploaded is refused in its transaction, and its
// upload deleted), and every create after the revocation returned is refused.
func TestCreatorKeyRevocationRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withKeys())
	servers := []*env{e, e.replica()}
	k := e.mintKey("racing", "off")
	var kc keyedCreates
	stop := make(chan struct{})
	kc.run(t, servers, 16, k.Key, func(w, i int) string { return fmt.Sprintf("race %d/%d %s", w, i, strings.Repeat("x", 2000)) }, stop, true)
	storetest.WaitFor(t, "creates with the key", func() bool { return e.count(`SELECT count(*) FROM pastes`) >= 40 })
	var rev struct {
		Pastes     int  `json:"pastes"`
		RevokedNow bool `json:"revoked_now"`
	}
	if err := json.Unmarshal(e.revokeKey(k.ID).body, &rev); err != nil || !rev.RevokedNow {
		t.Fatalf("revocation: %+v, %v", rev, err)
	}
	for _, srv := range servers {
		if _, status, _ := createRaw(srv, "after the revocation returned", k.Key); status != http.StatusUnauthorized {
			t.Errorf("a create after the revocation returned: %d", status)
		}
	}
	kc.wg.Wait()
	close(stop)
	if len(kc.other) > 0 {
		t.Errorf("creates answered neither 201 nor 401: %v", kc.other[:min(3, len(kc.other))])
	}
	if kc.refused < 16 {
		t.Errorf("%d creates refused; want each of the 16 workers refused once", kc.refused)
	}
	n := e.count(`SELECT count(*) FROM pastes WHERE creator_key_id = $1`, k.ID)
	if n != rev.Pastes || n != len(kc.created) || e.count(`SELECT count(*) FROM pastes`) != n {
		t.Errorf("the key has %d pastes (%d in all); at the revocation's commit %d; answered 201: %d. Want all equal",
			n, e.count(`SELECT count(*) FROM pastes`), rev.Pastes, len(kc.created))
	}
	if m := e.count(`SELECT count(*) FROM pastes WHERE short_code = ANY($1) AND creator_key_id = $2`, kc.created, k.ID); m != len(kc.created) {
		t.Errorf("%d of the %d pastes answered 201 are recorded against the key", m, len(kc.created))
	}
	if out := e.count(`SELECT count(*) FROM blob_outbox`); out != 0 {
		t.Errorf("%d uploads of refused creates left in the outbox; want them deleted at once", out)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
	t.Logf("%d created, %d refused, %d at the revocation's commit", len(kc.created), kc.refused, rev.Pastes)
}

// TestCreatorKeyTakedownUnderCreates takes down everything a key created while goroutines keep
// creating with it, some of the same bytes as pastes made without the key: afterwards every paste
// of the key is either taken down (410 taken-down) or was created after the takedown committed and
// is live, the takedown's count and the live ones add up to the creates answered 201, the pastes
// of no key are untouched, and ref_counts, the bucket and the outbox are right.
func TestCreatorKeyTakedownUnderCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	k := e.mintKey("spammer", "off")
	var shared []created
	for i := range 4 {
		shared = append(shared, e.create(fmt.Sprintf("shared spam %d", i), ""))
	}
	var kc keyedCreates
	stop := make(chan struct{})
	content := func(w, i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("shared spam %d", (w+i)%4) // the same bytes as the pastes of no key
		}
		return fmt.Sprintf("spam %d/%d", w, i)
	}
	kc.run(t, []*env{e, e.replica()}, 12, k.Key, content, stop, false)
	storetest.WaitFor(t, "creates with the key", func() bool {
		return e.count(`SELECT count(*) FROM pastes WHERE creator_key_id = $1`, k.ID) >= 40
	})
	r := e.do(e.request(http.MethodPost, "/admin/keys/"+strconv.FormatInt(k.ID, 10)+"/takedown",
		strings.NewReader(`{"reason": "spam run"}`), append(adminAuth, "Content-Type", "application/json")...))
	var res struct {
		PastesTakenDown int `json:"pastes_taken_down"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("takedown by key: %d %s", r.StatusCode, r.body)
	}
	time.Sleep(200 * time.Millisecond) // creates go on after it
	close(stop)
	kc.wg.Wait()
	if len(kc.other) > 0 || kc.refused > 0 {
		t.Errorf("creates refused (%d) or answered otherwise: %v", kc.refused, kc.other[:min(3, len(kc.other))])
	}
	live := e.count(`SELECT count(*) FROM pastes WHERE creator_key_id = $1`, k.ID)
	gone := e.count(`SELECT count(*) FROM tombstones WHERE short_code = ANY($1) AND deleted_reason = 'takedown'`, kc.created)
	if gone != res.PastesTakenDown || live+gone != len(kc.created) || res.PastesTakenDown < 40 {
		t.Errorf("taken down %d (answered %d), live %d; created %d", gone, res.PastesTakenDown, live, len(kc.created))
	}
	for _, p := range shared {
		if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK {
			t.Errorf("a paste of no key sharing the bytes: %d", r.StatusCode)
		}
	}
	if r := e.get("/raw/" + kc.created[0]); r.StatusCode != http.StatusGone || problemType(t, r) != "/problems/taken-down" {
		t.Errorf("the key's first paste after the takedown: %d %s", r.StatusCode, r.body)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
	t.Logf("%d created, %d taken down, %d after", len(kc.created), gone, live)
}

// TestCreatorKeyRevocationAcrossReplicas: two servers on one database. A revocation holds at once
// on the replica that made it, and within 5 s on the other, where a create is refused before a byte
// of its body is read; and no create with the key commits on either from the revocation on (the
// transaction's own check), cache or not.
func TestCreatorKeyRevocationAcrossReplicas(t *testing.T) {
	t.Parallel()
	a := newEnv(t, withAdmin(adminToken, 1), withKeys())
	b := a.replica()
	k := a.mintKey("two replicas", "")
	a.createWith("cached on a", bearer(k.Key))
	b.createWith("cached on b", bearer(k.Key))
	if refusedUnread(t, b, k.Key) {
		t.Fatal("a valid key refused")
	}
	a.revokeKey(k.ID)
	revoked := time.Now()
	if !refusedUnread(t, a, k.Key) {
		t.Error("the replica that revoked still reads the body of a create with the key")
	}
	var last int32
	for !refusedUnread(t, b, k.Key) {
		if _, status, _ := createRaw(b, "on b, after", k.Key); status != http.StatusUnauthorized {
			atomic.StoreInt32(&last, int32(status))
		}
		if time.Since(revoked) > 5*time.Second {
			t.Fatalf("the other replica still takes creates with a key revoked %v ago", time.Since(revoked))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if last != 0 {
		t.Errorf("a create on the other replica after the revocation answered %d, want 401", last)
	}
	if n := a.count(`SELECT count(*) FROM pastes WHERE creator_key_id = $1`, k.ID); n != 2 {
		t.Errorf("the key has %d pastes, want the 2 made before", n)
	}
	t.Logf("the other replica refused the key unread after %v (cache %v)", time.Since(revoked).Round(time.Millisecond), paste.KeyCacheTTL)
}

// refusedUnread sends a create with key whose body waits for the server's 100 Continue, and reports
// whether it was answered 401 instead: refused before a byte of its body was asked for, let alone
// uploaded. (Without Expect, net/http reads a small unread body before it answers.)
func refusedUnread(t *testing.T, e *env, key string) bool {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n", key)
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false // no answer without the body: it would have read it
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusUnauthorized // not 100: the body was never asked for
}
