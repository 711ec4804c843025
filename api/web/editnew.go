package web

import (
	"bytes"
	"net/http"
	"unicode/utf8"

	"pastebin/api/problem"
	"pastebin/paste"
	"pastebin/store"
)

// Edit as new: a paste's page links the create form filled with its text, title, language and file
// name (GET /?from=<code>), drawn here on the server, so it needs no JavaScript. What it creates is a
// new paste; the same text costs nothing more, since content is stored once.

// whyNotEditable says why p may not fill the create form, or "" if it may. This is the one place
// that decides: only a paste that any GET may read (paste.OpenToGet), so never one with a view
// limit (burn after reading is one view), whose text only its consuming POST may have; and never an
// end-to-end encrypted one, whose text the server cannot read.
func whyNotEditable(p store.Paste) string {
	switch {
	case !paste.OpenToGet(p) && p.BurnAfterRead():
		return "This paste burns after reading: only the one who opens it sees its text, so it cannot fill a new paste."
	case !paste.OpenToGet(p):
		return "This paste has a view limit: only those who open it see its text, so it cannot fill a new paste."
	case p.Encryption != "":
		return "This paste is encrypted end to end: the server cannot read its text, so it cannot fill a new paste. Open it, copy its text, and paste it into a new one."
	}
	return ""
}

// editableAsNew reports whether p may fill the create form (whyNotEditable).
func editableAsNew(p store.Paste) bool { return whyNotEditable(p) == "" }

// copyOf is the create form filled with the paste code: its text, as long as the page would show it
// as text, its title, language and file name. The expiry is the form's default, as for any new paste.
func (pages *Pages) copyOf(r *http.Request, rd *paste.Reader, code string) (formValues, error) {
	f, err := rd.Find(r.Context(), code) // 404 and 410 as its page answers them
	if err != nil {
		return formValues{}, err
	}
	if why := whyNotEditable(f.Paste); why != "" {
		return formValues{}, problem.NotEditable.WithDetail(why)
	}
	if f.Paste.Size > maxShownBytes {
		return formValues{}, problem.NotEditable.WithDetail("This paste is too large to edit in the page. Download it, edit it, and upload the file.")
	}
	data, err := rd.Bytes(r.Context(), f)
	if err != nil {
		return formValues{}, err
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return formValues{}, problem.NotEditable.WithDetail("This paste is not text, so the form cannot hold it. Download it instead.")
	}
	p := f.Paste
	title := pages.newPasteView(r, p).PageTitle()
	return formValues{Content: string(data), Title: p.Title, Language: p.Language, Filename: p.Filename, From: p.Code, FromTitle: title}, nil
}
