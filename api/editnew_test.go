package api_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pastebin/envelope"
)

// TestEditAsNew: a paste's page links the create form filled on the server with its text, title,
// language (one the menu does not list included) and file name; posting it makes a new paste of
// the same bytes, stored once, and leaves the first as it was.
func TestEditAsNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const text = "main = putStrLn \"<hi> & bye\"\n"
	p := e.create(text, "?title=Greeting&language=haskell&filename=Main.hs")
	page := e.page("/" + p.code)
	if !strings.Contains(page.text(), `href="/?from=`+p.code+`"`) {
		t.Fatalf("the paste's page has no edit-as-new link:\n%.2000s", page.body)
	}
	r := e.page("/?from=" + p.code)
	checkPageHeaders(t, r, "no-cache")
	for _, want := range []string{
		`>` + html.EscapeString(text) + `</textarea>`,
		`id="title" name="title" type="text" maxlength="200" value="Greeting"`,
		`<option value="haskell" selected>haskell</option>`,
		`id="filename" name="filename" type="text" maxlength="255" value="Main.hs"`,
		`A copy of <a href="/` + p.code + `">Greeting</a>`,
		`<meta name="robots" content="noindex, nofollow">`,
	} {
		if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), want) {
			t.Errorf("GET /?from=%s: %d, lacks %s", p.code, r.StatusCode, want)
		}
	}
	form := url.Values{"content": {text}, "title": {"Greeting"}, "language": {"haskell"}, "filename": {"Main.hs"}, "expires_in": {"1h"}}
	c := e.send(e.request(http.MethodPost, "/", strings.NewReader(form.Encode()),
		"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept))
	code := strings.TrimPrefix(c.Header.Get("Location"), "/")
	if c.StatusCode != http.StatusSeeOther || code == p.code || e.get("/raw/"+code).text() != text {
		t.Fatalf("posting the filled form: %d to %q", c.StatusCode, c.Header.Get("Location"))
	}
	if n := e.refCount(text); n != 2 || e.get("/raw/"+p.code).text() != text {
		t.Errorf("after edit as new: ref_count %d, want 2 pastes of one stored content, the first unchanged", n)
	}
	if r := e.get("/?from=" + p.code); r.StatusCode != http.StatusOK || strings.Contains(r.text(), text) {
		t.Errorf("curl's GET /?from=: %d %.100s; want the usage text", r.StatusCode, r.body)
	}
	long := strings.Repeat("main = putStrLn \"compresses\"\n", 300) // stored compressed
	z := e.create(long, "")
	if enc := e.contentEncoding(long); enc != "zstd" || !strings.Contains(e.page("/?from="+z.code).text(), ">"+html.EscapeString(long)+"</textarea>") {
		t.Errorf("edit as new of a paste stored as %q: the form does not hold its text", enc)
	}
}

// TestEditAsNewRefusals: edit as new is not offered, and GET /?from= answers 409 without a byte of
// the text and saying why, for a paste that burns after reading or has a view limit (which keep
// every view), an encrypted one (whose text the server cannot read) and one the form cannot hold;
// a paste that is gone or was never there answers as its page does.
func TestEditAsNewRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMaxSize(2<<20))
	burn := e.create("read me once", "?burn=true")
	limited := e.create("read me once or twice", "?max_views=2")
	sealed, format, _ := seal(t, envelope.Paste{Text: []byte("read me once, encrypted")}, "")
	encrypted := e.createEncrypted(sealed, format.String(), "")
	binary := e.create("\x00\x01not text\xff", "")
	large := e.create(strings.Repeat("a line of text\n", 80<<10), "") // over the page's 1 MiB
	deleted := e.create("deleted", "")
	if r := e.delete(deleted.code, deleted.token); r.StatusCode != http.StatusNoContent {
		t.Fatal(r.StatusCode)
	}
	for _, tt := range []struct {
		name, code string
		status     int
		why        string
	}{
		{"burn", burn.code, http.StatusConflict, "burns after reading"},
		{"view limit", limited.code, http.StatusConflict, "has a view limit"},
		{"encrypted", encrypted, http.StatusConflict, "encrypted end to end"},
		{"binary", binary.code, http.StatusConflict, "not text"},
		{"large", large.code, http.StatusConflict, "too large"},
		{"deleted", deleted.code, http.StatusGone, ""},
		{"unknown", "Abcdefghijk", http.StatusNotFound, ""},
		{"malformed", "../etc", http.StatusNotFound, ""},
	} {
		r := e.page("/?from=" + url.QueryEscape(tt.code))
		if r.StatusCode != tt.status || strings.Contains(r.text(), "read me once") || strings.Contains(r.text(), "<textarea") ||
			!strings.Contains(r.text(), tt.why) {
			t.Errorf("%s: GET /?from=: %d; want %d, an error page without the text, saying %q", tt.name, r.StatusCode, tt.status, tt.why)
		}
		if tt.status == http.StatusConflict && !strings.Contains(r.text(), `href="/`+tt.code+`"`) {
			t.Errorf("%s: the refusal does not lead back to the paste", tt.name)
		}
		if tt.status == http.StatusConflict && strings.Contains(e.page("/"+tt.code).text(), "?from=") {
			t.Errorf("%s: the paste's page offers edit as new", tt.name)
		}
	}
	if r := e.do(e.request(http.MethodPost, "/raw/"+burn.code, nil)); r.StatusCode != http.StatusOK || r.text() != "read me once" {
		t.Errorf("the burn paste after GET /?from=: %d %q; want it still there for its POST", r.StatusCode, r.body)
	}
	if r := e.do(e.request(http.MethodPost, "/raw/"+limited.code, nil)); r.StatusCode != http.StatusOK || r.Header.Get("Paste-Views-Left") != "1" {
		t.Errorf("the view-limited paste after GET /?from=: %d, %q views left; want its first view taken now", r.StatusCode, r.Header.Get("Paste-Views-Left"))
	}
}
