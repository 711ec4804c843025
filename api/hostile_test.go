package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"pastebin/api"
)

// hostile is a request of a shape a crawler or an attacker sends, written out raw so that no client
// tidies it: the request line and headers ("\n" between lines) and the body.
type hostile struct {
	name       string
	head, body string
	status     int    // the answer wanted
	problem    string // its problem type's name, asPage, byNetHTTP, or "" for an answer that is not an error
}

// Answers to hostile requests that carry no problem type.
const (
	asPage    = "(a page)"      // an error page or the form again, to a browser
	byNetHTTP = "(by net/http)" // net/http's own plain 400 to a request it cannot read (a control byte in a header), before any handler
)

func repeat(s string, n int) string { return strings.Repeat(s, n) }

// multipartOf writes a multipart/form-data body of parts, each "headers\n\nbody", with boundary XX.
func multipartOf(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		h, body, _ := strings.Cut(p, "\n\n")
		b.WriteString("--XX\r\n" + strings.ReplaceAll(h, "\n", "\r\n") + "\r\n\r\n" + body + "\r\n")
	}
	b.WriteString("--XX--\r\n")
	return b.String()
}

// post is a POST of body with its Content-Type and Content-Length, and headers.
func post(target, contentType, body string, headers ...string) hostile {
	head := "POST " + target + " HTTP/1.1\nHost: x\nContent-Type: " + contentType + "\n" +
		fmt.Sprintf("Content-Length: %d\n", len(body))
	for _, h := range headers {
		head += h + "\n"
	}
	return hostile{head: head, body: body}
}

// raw is a request written out whole.
func raw(head, body string) hostile { return hostile{head: head, body: body} }

func get(target string, headers ...string) string {
	head := "GET " + target + " HTTP/1.1\nHost: x\n"
	for _, h := range headers {
		head += h + "\n"
	}
	return head
}

const formType = "application/x-www-form-urlencoded"

// hostileRequests are the shapes: depth, size, paths, names, ranges, forms, encodings.
func hostileRequests() []hostile {
	h := []hostile{
		// Paths.
		{name: "deep path", head: get(repeat("/a", 2000)), status: 404, problem: "route-not-found"},
		{name: "long path", head: get("/" + repeat("a", 30000)), status: 404, problem: "not-found"},
		{name: "path past the header bound", head: get("/" + repeat("a", 70000)), status: 431, problem: "headers-too-large"},
		{name: "encoded slash in a code", head: get("/raw/abc%2Fdef"), status: 404, problem: "not-found"},
		{name: "encoded dot segments", head: get("/%2e%2e/%2e%2e/etc/passwd"), status: 404, problem: "route-not-found"},
		{name: "dot segments", head: get("/raw/../../etc/passwd"), status: 404, problem: "route-not-found"},
		{name: "dot segments to the admin API", head: get("/raw/../admin/cleanup/runs"), status: 404, problem: "route-not-found"},
		{name: "encoded slashes in a static file", head: get("/static/abc/..%2F..%2Fgo.mod"), status: 404, problem: "route-not-found"},
		{name: "NUL in a code", head: get("/raw/%00"), status: 404, problem: "not-found"},
		{name: "NUL in the path", head: get("/%00abcdefghij"), status: 404, problem: "not-found"},
		{name: "invalid UTF-8 in the path", head: get("/%ff%fe%fd"), status: 404, problem: "not-found"},
		{name: "invalid UTF-8 in a code", head: get("/api/v1/pastes/%ff%fe%fdabcdefgh"), status: 404, problem: "not-found"},
		{name: "overlong code", head: get("/" + repeat("a", 5000)), status: 404, problem: "not-found"},
		{name: "overlong raw code", head: get("/raw/" + repeat("A", 5000)), status: 404, problem: "not-found"},
		{name: "backslashes", head: get(`/raw/..\..\windows`), status: 404, problem: "not-found"},
		{name: "absolute URL as the target", head: get("http://evil.example/raw/abcdefghijk"), status: 404, problem: "not-found"},
		{name: "asterisk target", head: "OPTIONS * HTTP/1.1\nHost: x\n", status: 200, problem: ""},
		{name: "problem name of NULs", head: get("/problems/%00%00"), status: 404, problem: "route-not-found"},
		{name: "overlong problem name", head: get("/problems/" + repeat("x", 10000)), status: 404, problem: "route-not-found"},
		{name: "static file with an odd hash", head: get("/static/%ff/app.js"), status: 404, problem: "route-not-found"},
		{name: "run id past int64", head: get("/admin/cleanup/runs/99999999999999999999999", "Authorization: Bearer "+adminToken), status: 404, problem: "run-not-found"},
		{name: "negative run id", head: get("/admin/cleanup/runs/-1", "Authorization: Bearer "+adminToken), status: 404, problem: "run-not-found"},
		{name: "run id of NULs", head: get("/admin/cleanup/runs/%00", "Authorization: Bearer "+adminToken), status: 404, problem: "run-not-found"},
		{name: "console run id past int64", head: get("/admin/runs/99999999999999999999999", "Accept: text/html"), status: 303, problem: ""},
		{name: "blocked hash of odd bytes", head: "DELETE /admin/blocked/%ff%00?reason=x HTTP/1.1\nHost: x\nAuthorization: Bearer " + adminToken + "\n", status: 400, problem: "malformed-request"},

		// Query strings.
		{name: "bad query escapes", head: get("/raw/abcdefghijk?%zz=%yy&download"), status: 404, problem: "not-found"},
		{name: "query of semicolons", head: get("/?;;;&&&=="), status: 200, problem: ""},
		{name: "huge query", head: get("/?" + repeat("a=b&", 10000)), status: 200, problem: ""},
		{name: "audit page before a NUL", head: get("/admin/audit?before=%00", "Authorization: Bearer "+adminToken), status: 400, problem: "malformed-request"},
		{name: "audit page before huge", head: get("/admin/audit?before=99999999999999999999999", "Authorization: Bearer "+adminToken), status: 400, problem: "malformed-request"},
		{name: "runs limit negative", head: get("/admin/cleanup/runs?limit=-5", "Authorization: Bearer "+adminToken), status: 400, problem: "malformed-request"},
		{name: "runs limit huge", head: get("/admin/cleanup/runs?limit=99999999999999999999", "Authorization: Bearer "+adminToken), status: 400, problem: "malformed-request"},
		{name: "runs limit not a number", head: get("/admin/cleanup/runs?limit=%00", "Authorization: Bearer "+adminToken), status: 400, problem: "malformed-request"},

		// Headers.
		{name: "Accept of odd ranges", head: get("/", "Accept: */*;q=abc, text/html;q=-1, ;;;, /, text/"), status: 200, problem: ""},
		{name: "Accept of a thousand ranges", head: get("/", "Accept: "+repeat("text/html;q=0.1, ", 1000)), status: 200, problem: ""},
		{name: "Range past the end", head: get("/healthz", "Range: bytes=999999-"), status: 200, problem: ""},
		{name: "Range of odd shapes", head: get("/openapi.yaml", "Range: bytes=5-1,-0,abc,0-0,1-2-3"), status: 200, problem: ""},
		{name: "If-None-Match of odd tags", head: get("/openapi.yaml", `If-None-Match: "a, W/, *, "`), status: 200, problem: ""},
		{name: "overlong bearer token", head: "DELETE /api/v1/pastes/abcdefghijk HTTP/1.1\nHost: x\nAuthorization: Bearer " + repeat("A", 20000) + "\n", status: 401, problem: "unauthorized"},
		{name: "bearer token of odd bytes", head: "DELETE /abcdefghijk HTTP/1.1\nHost: x\nAuthorization: Bearer \x7f\x01\xff\n", status: 400, problem: byNetHTTP},
		{name: "admin bearer token of odd bytes", head: get("/admin/cleanup/backlog", "Authorization: Bearer \xff\xfe"), status: 401, problem: "wrong-admin-token"},
		{name: "console cookie of odd bytes", head: get("/admin", "Accept: text/html", "Cookie: pastebin_admin=\x01\xff%00; pastebin_admin=x"), status: 400, problem: byNetHTTP},
		{name: "overlong console cookie", head: get("/admin/runs", "Accept: text/html", "Cookie: pastebin_admin="+repeat("A", 20000)), status: 303, problem: ""},
		{name: "paste token cookie of odd bytes", head: get("/abcdefghijk", "Accept: text/html", "Cookie: paste_token=%00%ff"), status: 404, problem: asPage},
		{name: "overlong request id", head: get("/healthz", "X-Request-Id: "+repeat("A", 10000)), status: 200, problem: ""},
		{name: "request id that forges log lines", head: get("/healthz", `X-Request-Id: a","level":"ERROR","msg":"forged`), status: 200, problem: ""},
		{name: "method in lower case", head: "get /healthz HTTP/1.1\nHost: x\n", status: 501, problem: "method-not-implemented"},
		{name: "method of two kilobytes", head: repeat("M", 2048) + " / HTTP/1.1\nHost: x\n", status: 501, problem: "method-not-implemented"},
		{name: "HEAD of an overlong code", head: "HEAD /raw/" + repeat("a", 5000) + " HTTP/1.1\nHost: x\n", status: 404, problem: ""},
		{name: "HTTP/1.0 without a host", head: "GET /healthz HTTP/1.0\n", status: 200, problem: ""},
		{name: "a thousand headers", head: get("/healthz", strings.Split(repeat("X-Junk: j\x00", 1000), "\x00")[:1000]...), status: 200, problem: ""},
		{name: "headers past the bound", head: get("/healthz", strings.Split(repeat("X-Junk: "+repeat("j", 100)+"\x00", 1000), "\x00")[:1000]...), status: 431, problem: "headers-too-large"},
		{name: "DELETE with a body", head: "DELETE /abcdefghijk HTTP/1.1\nHost: x\nContent-Length: 5\n", body: "hello", status: 401, problem: "unauthorized"},
		{name: "forwarded-for of garbage", head: get("/healthz", "X-Forwarded-For: "+repeat("not-an-address, ", 500)), status: 200, problem: ""},
	}
	h = append(h, hostileCreates()...)
	return h
}

// hostileCreates are creates of odd shapes: options, names, bodies, forms, JSON.
func hostileCreates() []hostile {
	var h []hostile
	add := func(name string, status int, problem string, r hostile) {
		r.name, r.status, r.problem = name, status, problem
		h = append(h, r)
	}
	add("title of ten thousand characters", 400, "malformed-request", post("/?title="+repeat("t", 10000), "text/plain", "x"))
	add("title with a NUL", 400, "malformed-request", post("/?title=a%00b", "text/plain", "x"))
	add("title of invalid UTF-8", 400, "malformed-request", post("/?title=%ff%fe", "text/plain", "x"))
	add("title header of invalid UTF-8", 400, "malformed-request", post("/", "text/plain", "x", "Paste-Title: \xff\xfe"))
	add("title header of control bytes", 400, byNetHTTP, post("/", "text/plain", "x", "Paste-Title: \x01\x02\x7f"))
	add("overlong file name", 400, "malformed-request", raw("PUT /"+repeat("n", 300)+" HTTP/1.1\nHost: x\nContent-Length: 1\n", "x"))
	add("file name with an encoded slash", 400, "malformed-request", raw("PUT /a%2Fb.txt HTTP/1.1\nHost: x\nContent-Length: 1\n", "x"))
	add("file name of dots", 400, "malformed-request", raw("PUT /.. HTTP/1.1\nHost: x\nContent-Length: 1\n", "x"))
	add("file name with a NUL", 400, "malformed-request", raw("PUT /a%00b HTTP/1.1\nHost: x\nContent-Length: 1\n", "x"))
	add("file name of invalid UTF-8", 400, "malformed-request", raw("PUT /%ff%fe HTTP/1.1\nHost: x\nContent-Length: 1\n", "x"))
	add("language of odd bytes", 400, "malformed-request", post("/?language=%00%ff<script>", "text/plain", "x"))
	add("expiry past every bound", 400, "invalid-expiry", post("/?expires_in=99999999999999999999999", "text/plain", "x"))
	add("expiry negative", 400, "invalid-expiry", post("/?expires_in=-1h", "text/plain", "x"))
	add("expiry of odd units", 400, "invalid-expiry", post("/?expires_in=1e9s", "text/plain", "x"))
	add("burn of odd bytes", 400, "malformed-request", post("/?burn=%00", "text/plain", "x"))
	add("duplicated options", 201, "", post("/?title=a&title=b&expires_in=1h&expires_in=never", "text/plain", "x"))
	add("empty body", 400, "empty-content", post("/", "text/plain", ""))
	add("content type of a thousand parameters", 201, "", post("/", "text/plain"+repeat("; a=b", 1000), "x"))
	add("body of NULs", 201, "", post("/", "application/octet-stream", repeat("\x00", 1000)))
	add("body of invalid UTF-8", 201, "", post("/", "text/plain", "\xff\xfe\xfd"))
	add("body larger than declared", 201, "", raw("POST / HTTP/1.1\nHost: x\nContent-Length: 3\n", "abcdef"))
	add("declared body past every bound", 413, "too-large", raw("POST / HTTP/1.1\nHost: x\nContent-Length: 99999999999\n", "x"))
	add("Idempotency-Key overlong", 400, "invalid-idempotency-key", post("/", "text/plain", "x", "Idempotency-Key: "+repeat("k", 5000)))
	add("Idempotency-Key of odd bytes", 400, byNetHTTP, post("/", "text/plain", "x", "Idempotency-Key: \x01\xff"))
	add("chunked body with a bad chunk size", 400, "incomplete-body", raw("POST / HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\n", "zz\r\nabc\r\n0\r\n\r\n"))

	// Multipart forms.
	add("multipart without a boundary", 400, "malformed-request", post("/", "multipart/form-data", "--XX\r\n\r\nx\r\n--XX--\r\n"))
	add("multipart with an empty boundary", 400, "malformed-request", post("/", "multipart/form-data; boundary=", "x"))
	add("multipart with another boundary", 400, "empty-content", post("/", "multipart/form-data; boundary=YY", multipartOf("Content-Disposition: form-data; name=\"file\"\n\nx")))
	add("multipart unterminated", 400, "malformed-request", post("/", "multipart/form-data; boundary=XX", "--XX\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc"))
	add("multipart with no parts", 400, "empty-content", post("/", "multipart/form-data; boundary=XX", "--XX--\r\n"))
	add("multipart part without headers", 400, "empty-content", post("/", "multipart/form-data; boundary=XX", multipartOf("\n\nx")))
	add("multipart with a huge part header", 400, "malformed-request", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"; filename=\""+repeat("f", 20000)+"\"\n\nx")))
	add("multipart with a thousand headers", 201, "", post("/", "multipart/form-data; boundary=XX",
		multipartOf(repeat("X-A: b\n", 1000)+"Content-Disposition: form-data; name=\"file\"\n\nx")))
	add("multipart with ten thousand parts", 201, "", post("/", "multipart/form-data; boundary=XX",
		multipartOf(append(strings.Split(repeat("Content-Disposition: form-data; name=\"junk\"\n\nj\x00", 10000), "\x00")[:10000],
			"Content-Disposition: form-data; name=\"file\"\n\nx")...)))
	add("multipart nested", 201, "", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"\nContent-Type: multipart/mixed; boundary=YY\n\n--YY\r\n\r\ninner\r\n--YY--")))
	add("multipart with duplicated files", 201, "", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"; filename=\"a\"\n\none", "Content-Disposition: form-data; name=\"file\"; filename=\"b\"\n\ntwo")))
	add("multipart file name of traversal", 201, "", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"; filename=\"../../etc/passwd\"\n\nx")))
	add("multipart file name of NULs", 400, "malformed-request", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"; filename=\"\x00\x00\"\n\nx")))
	add("multipart disposition of garbage", 400, "empty-content", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: ;;;=\"\n\nx")))
	add("multipart field of a megabyte", 400, "malformed-request", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"\n\nx", "Content-Disposition: form-data; name=\"title\"\n\n"+repeat("t", 1<<20))))
	add("multipart with a base64 part", 201, "", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"\nContent-Transfer-Encoding: base64\n\n!!!not base64!!!")))
	add("multipart with a quoted-printable part", 400, "malformed-request", post("/", "multipart/form-data; boundary=XX",
		multipartOf("Content-Disposition: form-data; name=\"file\"\nContent-Transfer-Encoding: quoted-printable\n\n=ZZ=\r")))

	// The web form.
	browser := "Accept: text/html"
	add("web form of bad escapes", 400, asPage, post("/", formType, "content=%zz&title=%", browser))
	add("web form with duplicated fields", 303, "", post("/", formType, "content=a&content=b&title=x&title=y&expires_in=1h&expires_in=2h", browser))
	add("web form of a thousand fields", 303, "", post("/", formType, repeat("x=y&", 1000)+"content=z", browser))
	add("web form with a NUL title", 400, asPage, post("/", formType, "content=a&title=%00", browser))
	add("web form with an odd expiry", 400, asPage, post("/", formType, "content=a&expires_in=%ff", browser))
	add("web multipart without a boundary", 400, asPage, post("/", "multipart/form-data", "x", browser))
	add("web multipart unterminated", 400, asPage, post("/", "multipart/form-data; boundary=XX", "--XX\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nabc", browser))
	add("delete form of bad escapes", 400, asPage, post("/abcdefghijk/delete", formType, "token=%zz", browser))
	add("delete form with duplicated tokens", 400, asPage, post("/abcdefghijk/delete", formType, "token=a&token=b", browser))
	add("console sign-in of bad escapes", 400, asPage, post("/admin/sign-in", formType, "token=%zz&next=%00", browser))
	add("console sign-in to an odd next", 401, asPage, post("/admin/sign-in?next=//evil.example", formType, "token=x", browser))
	add("console form of a megabyte", 400, asPage, post("/admin/sign-in", formType, "token="+repeat("x", 1<<20), browser))

	// JSON.
	js := "application/json"
	add("JSON deep", 400, "malformed-request", post("/api/v1/pastes", js, `{"content":"x","title":`+repeat("[", 20000)+repeat("]", 20000)+`}`))
	add("JSON deep objects", 400, "malformed-request", post("/api/v1/pastes", js, repeat(`{"a":`, 20000)+`1`+repeat("}", 20000)))
	add("JSON with duplicated keys", 201, "", post("/api/v1/pastes", js, `{"content":"a","content":"b"}`))
	add("JSON with a huge number", 400, "invalid-expiry", post("/api/v1/pastes", js, `{"content":"a","expires_in":1e400}`))
	add("JSON with a negative expiry", 400, "invalid-expiry", post("/api/v1/pastes", js, `{"content":"a","expires_in":-3600}`))
	add("JSON with invalid UTF-8", 201, "", post("/api/v1/pastes", js, "{\"content\":\"\xff\xfe\"}"))
	add("JSON with a NUL escape", 400, "malformed-request", post("/api/v1/pastes", js, `{"content":"a","title":"\u0000"}`))
	add("JSON with lone surrogates", 201, "", post("/api/v1/pastes", js, `{"content":"\ud800\udfff\ud800"}`))
	add("JSON of the wrong types", 400, "malformed-request", post("/api/v1/pastes", js, `{"content":["a"],"burn_after_read":"yes"}`))
	add("JSON with trailing garbage", 400, "malformed-request", post("/api/v1/pastes", js, `{"content":"a"}}}`))
	add("JSON of odd media type", 400, byNetHTTP, post("/api/v1/pastes", "application/json; charset=\x01", `{"content":"a"}`))
	add("JSON block of odd content", 400, "malformed-request", post("/admin/blocked", js, `{"content_hash":"`+repeat("z", 64)+`","reason":"\u0000"}`, "Authorization: Bearer "+adminToken))
	add("JSON block deep", 400, "malformed-request", post("/admin/blocked", js, repeat("[", 20000), "Authorization: Bearer "+adminToken))
	return h
}

// answer is what the server answered to a raw request.
type answer struct {
	status int
	ctype  string
	body   string
}

// sendRaw writes head and body on a connection of its own and reads the answer.
func sendRaw(t *testing.T, addr, head, body string) answer {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(head, " ") // a HEAD's answer has no body to wait for
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

// TestHostileRequests sends each shape to the real server: every one is answered with the status it
// should have, an error as problem details (or a page, to a browser), never a 5xx, and nothing is
// logged at ERROR (an internal error, a panic).
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := newEnv(t, withAdmin(adminToken, 0), withLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		withConfig(func(c *api.Config) { c.MaxHeaderBytes = 64 << 10 }))
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	for _, h := range hostileRequests() {
		before := len(logs.String())
		a := sendRaw(t, addr, h.head, h.body)
		checkHostileAnswer(t, h, a)
		if strings.Contains(logs.String()[before:], `"level":"ERROR"`) {
			t.Errorf("%s: logged an error: %s", h.name, logs.String()[before:])
		}
	}
}

// checkHostileAnswer checks the status a hostile request was answered, and that an error carries
// its problem type (or is a page, to a browser).
func checkHostileAnswer(t *testing.T, h hostile, a answer) {
	t.Helper()
	var p struct{ Type string }
	_ = json.Unmarshal([]byte(a.body), &p)
	if a.status != h.status {
		t.Errorf("%s: answered %d %s, want %d %s", h.name, a.status, p.Type, h.status, h.problem)
		return
	}
	switch h.problem {
	case "":
	case asPage:
		if !strings.HasPrefix(a.ctype, "text/html") {
			t.Errorf("%s: answered %s, want a page", h.name, a.ctype)
		}
	case byNetHTTP:
		if !strings.HasPrefix(a.ctype, "text/plain") {
			t.Errorf("%s: answered %s, want net/http's plain text", h.name, a.ctype)
		}
	default:
		if a.ctype != "application/problem+json" || p.Type != "/problems/"+h.problem {
			t.Errorf("%s: answered %s %s, want problem details of type %s", h.name, a.ctype, p.Type, h.problem)
		}
	}
}
