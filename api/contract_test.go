package api_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"pastebin/api"
)

// TestProblemTextIsNotHTMLEscaped: problem details are JSON that is never HTML, so a "<" in a
// detail is written as it is, not as \u003c.
func TestProblemTextIsNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.get("/nothing/%3Chere%3E")
	if r.StatusCode != http.StatusNotFound || !strings.Contains(r.text(), "/nothing/<here>") {
		t.Errorf("got %d %s, want 404 naming /nothing/<here> as it is", r.StatusCode, r.body)
	}
}

// TestMethodNotAllowedSaysWhatIs: a 405 names the methods the route has in Allow (RFC 9110,
// section 15.5.6), taken from the router itself, HEAD wherever GET is.
func TestMethodNotAllowedSaysWhatIs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 0))
	admin := []string{"Authorization", "Bearer " + adminToken}
	for _, tt := range []struct {
		method, path string
		headers      []string
		allow        string
	}{
		{http.MethodPatch, "/api/v1/pastes", nil, "POST"},
		{http.MethodGet, "/api/v1/pastes", nil, "POST"},
		// One segment is also /{code} (HEAD, DELETE; POST for codes alone) and /{name} (PUT): the router serves those too.
		{http.MethodPost, "/healthz", nil, "GET, HEAD, PUT, DELETE"},
		{http.MethodPatch, "/readyz", nil, "GET, HEAD, POST, PUT, DELETE"},
		{http.MethodPost, "/metrics", nil, "GET, HEAD, PUT, DELETE"},
		{http.MethodPost, "/openapi.yaml", nil, "GET, HEAD, PUT, DELETE"},
		{http.MethodPost, "/problems", nil, "GET, HEAD, PUT, DELETE"},
		{http.MethodDelete, "/problems/gone", nil, "GET, HEAD"},
		{http.MethodPatch, "/", nil, "GET, HEAD, POST"},
		{http.MethodPatch, "/abcdefghijk", nil, "GET, HEAD, POST, PUT, DELETE"},
		{http.MethodPost, "/api/v1/pastes/abcdefghijk", nil, "GET, HEAD, DELETE"},
		{http.MethodPut, "/raw/abcdefghijk", nil, "GET, HEAD, POST"},
		{http.MethodGet, "/abcdefghijk/burn", nil, "POST"},
		{http.MethodDelete, "/abcdefghijk/delete", nil, "POST"},
		{http.MethodPost, "/static/0123/app.js", nil, "GET, HEAD"},
		{http.MethodGet, "/admin/cleanup", admin, "POST"},
		{http.MethodDelete, "/admin/cleanup/runs", admin, "GET, HEAD"},
		{http.MethodPost, "/admin/cleanup/runs/7", admin, "GET, HEAD"},
		{http.MethodPut, "/admin/cleanup/backlog", admin, "GET, HEAD"},
		{http.MethodPatch, "/admin", nil, "GET, HEAD"},
		{http.MethodGet, "/admin/sign-out", nil, "POST"},
		{http.MethodDelete, "/admin/sign-in", nil, "GET, HEAD, POST"},
	} {
		r := e.do(e.request(tt.method, tt.path, nil, tt.headers...))
		if r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != tt.allow ||
			r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: got %d, Allow %q, %s; want 405, Allow %q, problem details",
				tt.method, tt.path, r.StatusCode, r.Header.Get("Allow"), r.Header.Get("Content-Type"), tt.allow)
		}
	}
	// A method no route serves is not implemented, wherever it is sent (RFC 9110, section 15.6.2).
	for _, path := range []string{"/problems/gone", "/no/such/route"} {
		if r := e.do(e.request("BREW", path, nil)); r.StatusCode != http.StatusNotImplemented || r.Header.Get("Allow") != "" {
			t.Errorf("BREW %s: got %d, Allow %q; want 501 and no Allow", path, r.StatusCode, r.Header.Get("Allow"))
		}
	}
}

// TestHeadMirrorsGet: HEAD answers the headers GET would, errors included (RFC 9110, section
// 9.3.2): the problem's Content-Type and the Content-Length of its body, and no body.
func TestHeadMirrorsGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	deleted := e.create("soon deleted", "")
	if r := e.delete(deleted.code, deleted.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", r.StatusCode)
	}
	live := e.create("alive", "")
	for _, tt := range []struct {
		path    string
		headers []string
		status  int
	}{
		{"/" + live.code, nil, http.StatusOK},
		{"/raw/" + live.code, nil, http.StatusOK},
		{"/Abcdefghijk", nil, http.StatusNotFound},
		{"/raw/Abcdefghijk", nil, http.StatusNotFound},
		{"/" + deleted.code, nil, http.StatusGone},
		{"/raw/" + deleted.code, nil, http.StatusGone},
		{"/" + deleted.code, []string{"Accept", browserAccept}, http.StatusGone},
	} {
		get := e.get(tt.path, tt.headers...)
		head := e.do(e.request(http.MethodHead, tt.path, nil, tt.headers...))
		if get.StatusCode != tt.status || head.StatusCode != tt.status || len(head.body) != 0 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") ||
			head.Header.Get("Content-Length") != strconv.Itoa(len(get.body)) {
			t.Errorf("%s %v: GET %d %s, %d bytes; HEAD %d %s, Content-Length %q, %d bytes of body",
				tt.path, tt.headers, get.StatusCode, get.Header.Get("Content-Type"), len(get.body),
				head.StatusCode, head.Header.Get("Content-Type"), head.Header.Get("Content-Length"), len(head.body))
		}
	}
}

// TestHeadersTooLarge: headers over the configured size answer 431 as every error is answered:
// problem details, or a page for a browser.
func TestHeadersTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) { c.MaxHeaderBytes = 8 << 10 }))
	big := strings.Repeat("a", 9<<10)
	if r := e.get("/healthz", "X-Big", strings.Repeat("a", 7<<10)); r.StatusCode != http.StatusOK {
		t.Errorf("headers under the limit: %d %s", r.StatusCode, r.body)
	}
	r := e.get("/healthz", "X-Big", big)
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(r.text(), "/problems/headers-too-large") {
		t.Errorf("headers over the limit: %d %s %s", r.StatusCode, r.Header.Get("Content-Type"), r.body)
	}
	r = e.get("/healthz", "X-Big", big, "Accept", browserAccept)
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Errorf("headers over the limit from a browser: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	// The request line counts too, as net/http counts it.
	if r := e.get("/raw/Abcdefghijk?x=" + big); r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a long request line: %d", r.StatusCode)
	}
}

// specAccepts checks a request against openapi.yaml: nil when the spec allows it.
func (e *env) specAccepts(req *http.Request, body string) error {
	e.t.Helper()
	route, params, err := e.spec.FindRoute(req)
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(strings.NewReader(body))
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}

// TestJSONCreateNullsAndEmpties: null or absent optional fields, and an empty expires_in, mean the
// default in a JSON create, as an empty query parameter, header or form field does; and the spec
// says so, accepting what the server accepts.
func TestJSONCreateNullsAndEmpties(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tt := range []struct {
		body   string
		status int
	}{
		{`{"content":"a","title":null,"language":null,"filename":null,"expires_in":null,"burn_after_read":null}`, http.StatusCreated},
		{`{"content":"b","expires_in":""}`, http.StatusCreated},
		{`{"content":"c","expires_in":"  "}`, http.StatusCreated},
		{`{"content":"d","title":"","language":"","filename":""}`, http.StatusCreated},
		{`{"content":"e","expires_in":0}`, http.StatusBadRequest},
		{`{"content":null}`, http.StatusBadRequest},
		{`{"content":"f","title":"` + strings.Repeat("t", 201) + `"}`, http.StatusBadRequest},
	} {
		req := e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(tt.body), "Content-Type", "application/json")
		r := e.do(req)
		var got struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
		_ = json.Unmarshal(r.body, &got)
		if r.StatusCode != tt.status || r.StatusCode == http.StatusCreated && !near(time.Until(got.ExpiresAt), 24*time.Hour) {
			t.Errorf("%s: got %d, expiring in %v; want %d and the default expiry", tt.body, r.StatusCode, time.Until(got.ExpiresAt), tt.status)
		}
		specErr := e.specAccepts(e.request(http.MethodPost, "/api/v1/pastes", nil, "Content-Type", "application/json"), tt.body)
		if (specErr == nil) != (tt.status == http.StatusCreated) {
			t.Errorf("%s: the server answers %d, the spec says %v", tt.body, tt.status, specErr)
		}
	}
	for _, q := range []string{"?expires_in=", "?expires_in=&title="} {
		r := e.do(e.request(http.MethodPost, "/"+q, strings.NewReader("query"), "Accept", "application/json"))
		var got struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
		_ = json.Unmarshal(r.body, &got)
		if r.StatusCode != http.StatusCreated || !near(time.Until(got.ExpiresAt), 24*time.Hour) {
			t.Errorf("POST /%s: got %d expiring in %v, want 201 and the default", q, r.StatusCode, time.Until(got.ExpiresAt))
		}
	}
}

// near reports whether d is within a minute of want.
func near(d, want time.Duration) bool { return d > want-time.Minute && d <= want }

// TestFilenameLimitIsBytes: a file name is limited to 255 bytes, as file systems count, and the
// server and openapi.yaml both say so.
func TestFilenameLimitIsBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tt := range []struct {
		name   string
		status int
	}{
		{strings.Repeat("€", 85), http.StatusCreated},     // 255 bytes
		{strings.Repeat("€", 86), http.StatusBadRequest},  // 86 characters, 258 bytes
		{strings.Repeat("a", 255), http.StatusCreated},    // 255 bytes
		{strings.Repeat("a", 256), http.StatusBadRequest}, // 256 bytes
	} {
		r := e.do(e.request(http.MethodPost, "/?filename="+url.QueryEscape(tt.name), strings.NewReader("x")))
		if r.StatusCode != tt.status || tt.status == http.StatusBadRequest && !strings.Contains(r.text(), "255 bytes") {
			t.Errorf("%d characters, %d bytes: got %d %s, want %d", utf8.RuneCountInString(tt.name), len(tt.name), r.StatusCode, r.body, tt.status)
		}
	}
	doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := doc.Components.Schemas["Filename"]; d == nil || !strings.Contains(d.Value.Description, "255 bytes") {
		t.Fatal("openapi.yaml has no Filename schema that says 255 bytes")
	}
	uses := map[string]*openapi3.SchemaRef{
		"query filename":        doc.Components.Parameters["FilenameQuery"].Value.Schema,
		"header Paste-Filename": doc.Components.Parameters["FilenameHeader"].Value.Schema,
		"JSON filename":         doc.Components.Schemas["NewPaste"].Value.Properties["filename"].Value.OneOf[0],
		"multipart filename":    doc.Paths.Find("/").Post.RequestBody.Value.Content["multipart/form-data"].Schema.Value.Properties["filename"],
	}
	for where, ref := range uses {
		if ref.Ref != "#/components/schemas/Filename" {
			t.Errorf("%s: schema %q, want the Filename schema", where, ref.Ref)
		}
	}
}

// TestDownloadNames: a download names its file for every client: filename* in UTF-8 for those that
// read it, and an ASCII filename= that keeps the extension for those that do not (curl -O -J).
func TestDownloadNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tt := range []struct {
		filename, ascii string // ascii "" stands for the paste's code
		star            bool
	}{
		{"notes.md", "notes.md", false},
		{"résumé.txt", "resume.txt", true},
		{"Straße-Übersicht.csv", "Stra_e-Ubersicht.csv", true},
		{"日本語.md", "", true},
		{"", "", false},
	} {
		p := e.create("download me "+tt.filename, "?filename="+url.QueryEscape(tt.filename))
		want := tt.ascii
		if want == "" {
			want = p.code + path.Ext(tt.filename)
			if tt.filename == "" {
				want = p.code + ".txt"
			}
		}
		cd := e.get("/raw/" + p.code + "?download").Header.Get("Content-Disposition")
		_, params, err := mime.ParseMediaType(cd)
		plain := regexp.MustCompile(`(?:^|;\s*)filename="?([^";]*)"?(?:;|$)`).FindStringSubmatch(cd)
		wantFull := cmp.Or(tt.filename, want)
		if err != nil || params["filename"] != wantFull || plain == nil || plain[1] != want ||
			strings.Contains(cd, "filename*=") != tt.star {
			t.Errorf("%q: Content-Disposition %q; want filename=%q and the full name %q", tt.filename, cd, want, wantFull)
		}
	}
}

// TestSpecSaysWhoMayCall: every operation in openapi.yaml declares its security, an empty list for
// the public ones (the console's sign-in among them), as linters ask.
func TestSpecSaysWhoMayCall(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			want := ""
			switch {
			case path == "/admin/sign-in":
			case strings.HasPrefix(op.OperationID, "createPaste"):
				want = "creatorKey" // optional ({} beside it) unless PASTEBIN_CREATE_ACCESS=keys
			case slices.Contains(op.Tags, "console"):
				want = "consoleSession"
			case strings.HasPrefix(path, "/admin/"):
				want = "adminToken"
			case method == http.MethodDelete:
				want = "ownerToken"
			}
			var got []string
			if op.Security != nil {
				for _, req := range *op.Security {
					for scheme := range req {
						got = append(got, scheme)
					}
				}
			}
			if want == "adminToken" && strings.Join(got, ",") == "adminToken,consoleSession" {
				want += ",consoleSession" // the console's page at the same address, for browsers
			}
			if op.Security == nil || strings.Join(got, ",") != want {
				t.Errorf("%s %s: security %v, want [%s]", method, path, got, want)
			}
		}
	}
}
