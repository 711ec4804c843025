package api_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"pastebin/api"
)

// report files a report on code through the JSON API and returns the answer.
func (e *env) report(code, body string, headers ...string) response {
	e.t.Helper()
	return e.do(e.request(http.MethodPost, "/api/v1/pastes/"+code+"/reports", strings.NewReader(body),
		append([]string{"Content-Type", "application/json"}, headers...)...))
}

// receiptOf reads the receipt of a report's 201.
func receiptOf(t *testing.T, r response) string {
	t.Helper()
	var got struct{ ID string }
	if err := json.Unmarshal(r.body, &got); err != nil || r.StatusCode != http.StatusCreated || len(got.ID) < 22 {
		t.Fatalf("report: %d %s, want 201 with a receipt", r.StatusCode, r.body)
	}
	if loc := r.Header.Get("Location"); loc != "/api/v1/reports/"+got.ID {
		t.Errorf("Location %q, want the receipt's address", loc)
	}
	return got.ID
}

// stateOf reads a receipt's state.
func (e *env) stateOf(receipt string) string {
	e.t.Helper()
	r := e.get("/api/v1/reports/" + receipt)
	var st struct {
		State     string
		ChangedAt time.Time `json:"changed_at"`
	}
	if err := json.Unmarshal(r.body, &st); err != nil || r.StatusCode != http.StatusOK || st.ChangedAt.IsZero() {
		e.t.Fatalf("report state: %d %s", r.StatusCode, r.body)
	}
	return st.State
}

// TestReportAPI: a report on a live paste answers 201 and a receipt whose state is open; an unknown
// paste is 404, a deleted one 410 and one taken down for legal reasons 451, as its readers are told;
// a bad reason or field 400, details past 4000 bytes 413, a body that is not JSON 415; a receipt
// nobody has 404. A burn-after-reading paste is reported without taking its view.
func TestReportAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 0))
	live, deleted, legal, burn := e.create("spam spam", ""), e.create("gone", ""), e.create("court", ""), e.create("once", "?burn=true")
	receipt := receiptOf(t, e.report(live.code, `{"reason": "spam", "details": "an ad", "contact": "me@example.org"}`))
	if got := e.stateOf(receipt); got != "open" {
		t.Errorf("state %q, want open", got)
	}
	e.delete(deleted.code, deleted.token)
	if r := e.do(e.request(http.MethodDelete, "/admin/pastes/"+legal.code+"?reason=court&legal=true", nil, adminAuth...)); r.StatusCode != http.StatusOK {
		t.Fatalf("legal takedown: %d %s", r.StatusCode, r.body)
	}
	for name, c := range map[string]struct {
		code, body string
		status     int
		typ        string
	}{
		"unknown paste":    {"Nothing0000", `{"reason": "spam"}`, 404, "/problems/not-found"},
		"deleted paste":    {deleted.code, `{"reason": "spam"}`, 410, "/problems/gone"},
		"legal takedown":   {legal.code, `{"reason": "spam"}`, 451, "/problems/unavailable-for-legal-reasons"},
		"unknown reason":   {live.code, `{"reason": "boring"}`, 400, "/problems/malformed-request"},
		"no reason":        {live.code, `{"details": "x"}`, 400, "/problems/malformed-request"},
		"unknown field":    {live.code, `{"reason": "spam", "name": "x"}`, 400, "/problems/malformed-request"},
		"control in text":  {live.code, `{"reason": "spam", "details": "a\u0000b"}`, 400, "/problems/malformed-request"},
		"contact too long": {live.code, `{"reason": "spam", "contact": "` + strings.Repeat("a", 321) + `"}`, 400, "/problems/malformed-request"},
		"details too long": {live.code, `{"reason": "spam", "details": "` + strings.Repeat("é", 2001) + `"}`, 413, "/problems/report-too-large"},
		"body too long":    {live.code, `{"reason": "spam", "details": "` + strings.Repeat("a", 17<<10) + `"}`, 413, "/problems/report-too-large"},
	} {
		if r := e.report(c.code, c.body); r.StatusCode != c.status || problemType(t, r) != c.typ {
			t.Errorf("%s: %d %s, want %d %s", name, r.StatusCode, r.body, c.status, c.typ)
		}
	}
	if r := e.do(e.request(http.MethodPost, "/api/v1/pastes/"+live.code+"/reports", strings.NewReader("reason=spam"),
		"Content-Type", "text/plain")); r.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a text body: %d, want 415", r.StatusCode)
	}
	if r := e.get("/api/v1/reports/" + strings.Repeat("A", 43)); r.StatusCode != http.StatusNotFound || problemType(t, r) != "/problems/report-not-found" {
		t.Errorf("unknown receipt: %d %s", r.StatusCode, r.body)
	}
	receiptOf(t, e.report(burn.code, `{"reason": "malware"}`))
	if r := e.do(e.request(http.MethodPost, "/raw/"+burn.code, nil)); r.StatusCode != http.StatusOK || r.text() != "once" {
		t.Errorf("burn paste after its report: %d %q, want its one view still there", r.StatusCode, r.text())
	}
	if n := e.count(`SELECT count(*) FROM reports`); n != 2 {
		t.Errorf("%d reports stored, want the 2 answered 201", n)
	}
}

// TestReportRateLimit: a client's reports past PASTEBIN_RATE_REPORT are refused 429 with
// Retry-After before anything is filed, the form's and the API's together; another client (named by
// the trusted proxy) still files.
func TestReportRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRates(api.Rate{}, api.Rate{}), withConfig(func(c *api.Config) {
		c.ReportRate = api.Rate{Requests: 3, Window: time.Hour}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}))
	p := e.create("reported often", "")
	client := []string{"X-Forwarded-For", "203.0.113.7"}
	for i := range 2 {
		if r := e.report(p.code, `{"reason": "spam"}`, client...); r.StatusCode != http.StatusCreated || r.Header.Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("report %d: %d %s", i, r.StatusCode, r.body)
		}
	}
	form := e.request(http.MethodPost, "/"+p.code+"/report", strings.NewReader(url.Values{"reason": {"spam"}}.Encode()),
		append([]string{"Content-Type", "application/x-www-form-urlencoded"}, client...)...)
	if r := e.do(form); r.StatusCode != http.StatusOK {
		t.Fatalf("the form's report: %d", r.StatusCode)
	}
	r := e.report(p.code, `{"reason": "spam"}`, client...)
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || problemType(t, r) != "/problems/rate-limited" {
		t.Errorf("fourth report: %d %s, want 429 with Retry-After", r.StatusCode, r.body)
	}
	if r := e.report(p.code, `{"reason": "spam"}`, "X-Forwarded-For", "198.51.100.9"); r.StatusCode != http.StatusCreated {
		t.Errorf("another client's report: %d, want 201", r.StatusCode)
	}
	if n := e.count(`SELECT count(*) FROM reports`); n != 4 {
		t.Errorf("%d reports filed, want 4: none for the refused one", n)
	}
}

// caseDecision posts a decision on the case of hash to the admin API.
func (e *env) caseDecision(hash, action, body string) response {
	e.t.Helper()
	return e.do(e.request(http.MethodPost, "/admin/reports/"+hash+"/"+action, strings.NewReader(body),
		append(adminAuth, "Content-Type", "application/json")...))
}

// TestAdminReports: GET /admin/reports groups open reports by content (copies are one case), newest
// first; a takedown closes its case's reports as actioned and its pastes answer 410; a dismissal
// closes the case as dismissed and leaves the paste up; a takedown with block closes every report of
// the content; each decision is in the audit log and the closed reports in ?state=.
func TestAdminReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 0))
	a1, a2, fine, blocked := e.create("copied spam", ""), e.create("copied spam", ""), e.create("fine", ""), e.create("phish", "")
	receipts := map[string]string{}
	for name, code := range map[string]string{"a1": a1.code, "a2": a2.code, "fine": fine.code, "blocked": blocked.code} {
		receipts[name] = receiptOf(t, e.report(code, `{"reason": "spam", "details": "`+name+`"}`))
	}
	var list struct {
		Cases []struct {
			ContentHash string `json:"content_hash"`
			Codes       []string
		}
	}
	r := e.get("/admin/reports", adminAuth...)
	if err := json.Unmarshal(r.body, &list); err != nil || r.StatusCode != http.StatusOK || len(list.Cases) != 3 {
		t.Fatalf("open cases: %d %s, want 3", r.StatusCode, r.body)
	}
	hashes := map[string]string{}
	for _, c := range list.Cases {
		hashes[c.Codes[0]] = c.ContentHash
		if len(c.Codes) == 2 {
			hashes[a1.code], hashes[a2.code] = c.ContentHash, c.ContentHash
		}
	}
	if r := e.caseDecision(hashes[a1.code], "takedown", `{"reason": "spam campaign"}`); r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `"reports_closed":2`) {
		t.Errorf("take down the copies' case: %d %s", r.StatusCode, r.body)
	}
	if r := e.caseDecision(hashes[fine.code], "dismiss", `{"reason": "not abuse"}`); r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `"reports_closed":1`) {
		t.Errorf("dismiss: %d %s", r.StatusCode, r.body)
	}
	if r := e.caseDecision(hashes[blocked.code], "takedown", `{"reason": "phishing", "block": true}`); r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `"blocked":true`) {
		t.Errorf("take down and block: %d %s", r.StatusCode, r.body)
	}
	for name, want := range map[string]string{"a1": "actioned", "a2": "actioned", "fine": "dismissed", "blocked": "actioned"} {
		if got := e.stateOf(receipts[name]); got != want {
			t.Errorf("%s: state %q, want %q", name, got, want)
		}
	}
	for code, want := range map[string]int{a1.code: 410, a2.code: 410, fine.code: 200, blocked.code: 410} {
		if r := e.get("/raw/" + code); r.StatusCode != want {
			t.Errorf("GET /raw/%s: %d, want %d", code, r.StatusCode, want)
		}
	}
	if r := e.do(e.request(http.MethodPost, "/", strings.NewReader("phish"))); r.StatusCode != http.StatusUnavailableForLegalReasons {
		t.Errorf("a create of the blocked content: %d, want 451", r.StatusCode)
	}
	if n := e.count(`SELECT count(*) FROM admin_audit WHERE action IN ('takedown', 'block', 'dismiss') AND (detail->>'reports_closed')::int > 0`); n != 4 {
		t.Errorf("%d audit entries that closed reports, want 4 (two takedowns, a dismissal, a block)", n)
	}
	for state, cases := range map[string]int{"open": 0, "actioned": 2, "dismissed": 1} {
		r := e.get("/admin/reports?state="+state, adminAuth...)
		if err := json.Unmarshal(r.body, &list); err != nil || len(list.Cases) != cases {
			t.Errorf("?state=%s: %d %s, want %d cases", state, r.StatusCode, r.body, cases)
		}
	}
	if r := e.caseDecision(hashes[a1.code], "takedown", `{"reason": "again"}`); r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `"reports_closed":0`) {
		t.Errorf("the same decision again: %d %s, want nothing done", r.StatusCode, r.body)
	}
	for _, bad := range []struct{ path, body string }{{"nothex/dismiss", `{"reason": "x"}`}, {hashes[fine.code] + "/dismiss", `{}`}} {
		if r := e.do(e.request(http.MethodPost, "/admin/reports/"+bad.path, strings.NewReader(bad.body), append(adminAuth, "Content-Type", "application/json")...)); r.StatusCode != http.StatusBadRequest {
			t.Errorf("POST /admin/reports/%s %s: %d, want 400", bad.path, bad.body, r.StatusCode)
		}
	}
	if r := e.get("/admin/reports?state=closed", adminAuth...); r.StatusCode != http.StatusBadRequest {
		t.Errorf("?state=closed: %d, want 400", r.StatusCode)
	}
	if r := e.get("/admin/reports"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", r.StatusCode)
	}
	// A takedown from elsewhere, DELETE /admin/pastes/{code}, closes the paste's reports too.
	other := e.create("reported, taken down elsewhere", "")
	receipt := receiptOf(t, e.report(other.code, `{"reason": "copyright"}`))
	r = e.do(e.request(http.MethodDelete, "/admin/pastes/"+other.code+"?reason=dmca", nil, adminAuth...))
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `"reports_closed":1`) || e.stateOf(receipt) != "actioned" {
		t.Errorf("DELETE /admin/pastes/{code} of a reported paste: %d %s, want its report closed", r.StatusCode, r.body)
	}
}

// TestReportPages: the report form answers a paste as its page does (200, 404, 410, HEAD alike) and
// takes no view; its post files the report and shows the receipt, shows the form again, 400, for
// a reason not on the list, and is refused 403 when a browser says another site sent it.
func TestReportPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	live, gone, burn := e.create("a paste", ""), e.create("gone", ""), e.create("burns", "?burn=true")
	e.delete(gone.code, gone.token)
	html := []string{"Accept", "text/html"}
	for path, want := range map[string]int{"/" + live.code + "/report": 200, "/" + burn.code + "/report": 200,
		"/Nothing0000/report": 404, "/" + gone.code + "/report": 410} {
		if r := e.get(path, html...); r.StatusCode != want || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s, want a %d page", path, r.StatusCode, r.Header.Get("Content-Type"), want)
		}
		if r := e.do(e.request(http.MethodHead, path, nil, html...)); r.StatusCode != want {
			t.Errorf("HEAD %s: %d, want %d", path, r.StatusCode, want)
		}
	}
	post := func(code string, form url.Values) response {
		return e.do(e.request(http.MethodPost, "/"+code+"/report", strings.NewReader(form.Encode()),
			"Content-Type", "application/x-www-form-urlencoded", "Accept", "text/html"))
	}
	r := post(live.code, url.Values{"reason": {"boring"}, "details": {"kept"}})
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.text(), "reason must be one of") || !strings.Contains(r.text(), ">kept</textarea>") {
		t.Errorf("a reason not on the list: %d, want the form again with what was typed", r.StatusCode)
	}
	r = post(burn.code, url.Values{"reason": {"personal_data"}, "contact": {"me@example.org"}})
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `id="receipt"`) || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the form's report: %d, want the receipt, not stored by caches", r.StatusCode)
	}
	for site, want := range map[string]int{"cross-site": 403, "same-origin": 200} {
		req := e.request(http.MethodPost, "/"+live.code+"/report", strings.NewReader("reason=spam"),
			"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", site)
		if r := e.do(req); r.StatusCode != want {
			t.Errorf("the form posted %s: %d, want %d", site, r.StatusCode, want)
		}
	}
	if r := post(gone.code, url.Values{"reason": {"spam"}}); r.StatusCode != http.StatusGone {
		t.Errorf("reporting a deleted paste from the form: %d, want 410", r.StatusCode)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE short_code = $1 AND views_left = 1`, burn.code); n != 1 {
		t.Error("the report form took the burn paste's view")
	}
	if n := e.count(`SELECT count(*) FROM reports`); n != 2 {
		t.Errorf("%d reports from the form, want 2 (the burn paste's, the same-origin one)", n)
	}
}
