package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/paste"
)

// Limits on the parts of a create's body besides the content.
const (
	maxFieldBytes     = 4 << 10  // any multipart field that is not the content
	multipartOverhead = 64 << 10 // room for boundaries and option fields around a paste of the maximum size
)

// limitBody refuses a body declared larger than bodyLimit before reading any of it, and cuts one
// that turns out larger while it is read; either way the client is told the paste limit. A body
// that fails to arrive in full is marked as the client's fault (problem.BodyError).
func limitBody(w http.ResponseWriter, r *http.Request, pasteLimit, bodyLimit int64) error {
	if r.ContentLength > bodyLimit {
		return &http.MaxBytesError{Limit: pasteLimit}
	}
	r.Body = clientBody{http.MaxBytesReader(w, r.Body, bodyLimit)}
	return nil
}

// clientBody marks the errors of reading a request body, but its end and its size bound, as the
// client's (problem.BodyError).
type clientBody struct{ io.ReadCloser }

func (b clientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && !isTooBig(err) {
		err = &problem.BodyError{Err: err}
	}
	return n, err
}

// isBodyFault reports whether err is the body's own failure, too big or cut short, which keeps
// its problem rather than being called malformed.
func isBodyFault(err error) bool {
	var cut *problem.BodyError
	return isTooBig(err) || errors.As(err, &cut)
}

// readContent reads a paste's bytes, at most max of them, hashing them on the way. Past max it fails
// with *http.MaxBytesError before anything is written anywhere.
func readContent(r io.Reader, max int64) ([]byte, []byte, error) {
	h := sha256.New()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.TeeReader(io.LimitReader(r, max+1), h))
	if err != nil {
		return nil, nil, err
	}
	if n > max {
		return nil, nil, &http.MaxBytesError{Limit: max}
	}
	if n == 0 {
		return nil, nil, problem.Empty.WithDetail("The paste has no content.")
	}
	return buf.Bytes(), h.Sum(nil), nil
}

// decodeCurlCreate reads a create from curl and the like: a raw body (--data-binary, -T) or a
// multipart form (-F file=@x), with options as query parameters, headers or form fields.
func decodeCurlCreate(r *http.Request, max int64) (paste.Input, error) {
	uploadName := pathParam(r, "name")
	in := paste.Input{Filename: uploadName}
	if err := applyOptions(&in, queryAndHeaderOptions(r)); err != nil {
		return paste.Input{}, err
	}
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var partName string
	var err error
	if mediaType == "multipart/form-data" {
		err = decodeMultipart(r, params["boundary"], max, &in, &partName)
	} else {
		in.Content, in.Hash, err = readContent(r.Body, max)
	}
	if err != nil {
		return paste.Input{}, asPasteLimit(err, max)
	}
	if in.Encryption != "" && (in.Filename == uploadName || in.Filename == partName) {
		in.Filename = "" // the upload's own name, not the paste's: that one is inside the ciphertext
	}
	return in, in.Tidy()
}

// pathParam is the route parameter name as the client meant it. chi routes on the escaped path
// when the request's escaping is not Go's own (%2F, lower-case hex), and its parameters are then
// still escaped: PUT /a%2Fb.txt would name a file "a%2Fb.txt", and PUT /caf%c3%a9.txt
// "caf%c3%a9.txt" where PUT /caf%C3%A9.txt names "café.txt".
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil { // RawPath parsed, so its escapes are sound
		return u
	}
	return v
}

// asPasteLimit reports a body cut at limitBody's bound as the paste limit: the one number the client
// can act on, since the bound adds room for form boundaries and fields.
func asPasteLimit(err error, max int64) error {
	if isTooBig(err) {
		return &http.MaxBytesError{Limit: max}
	}
	return err
}

// isTooBig reports whether err is a body cut at its size bound (413).
func isTooBig(err error) bool {
	var tooBig *http.MaxBytesError
	return errors.As(err, &tooBig)
}

// optionNames maps each create option to its query parameter and its header.
var optionNames = []struct{ query, header string }{
	{"expires_in", "Paste-Expires-In"},
	{"burn", "Paste-Burn-After-Reading"},
	{"max_views", "Paste-Max-Views"},
	{"encryption", "Paste-Encryption"},
	{"title", "Paste-Title"},
	{"language", "Paste-Language"},
	{"filename", "Paste-Filename"},
}

// queryAndHeaderOptions collects options by query name; a query parameter wins over its header.
func queryAndHeaderOptions(r *http.Request) map[string]string {
	opts := map[string]string{}
	q := r.URL.Query()
	for _, o := range optionNames {
		if v := r.Header.Get(o.header); v != "" {
			opts[o.query] = v
		}
		if q.Has(o.query) {
			opts[o.query] = q.Get(o.query)
		}
	}
	if q.Has("burn_after_read") { // the JSON field's name, accepted here too
		opts["burn"] = q.Get("burn_after_read")
	}
	return opts
}

func applyOptions(in *paste.Input, opts map[string]string) error {
	for name, v := range opts {
		switch name {
		case "expires_in":
			in.ExpiresIn = v
		case "burn", "burn_after_read":
			b, err := parseBool(v)
			if err != nil {
				return err
			}
			in.Burn = b
		case "max_views":
			n, err := parseMaxViews(v)
			if err != nil {
				return err
			}
			in.MaxViews = n
		case "encryption":
			in.Encryption = v
		case "title":
			in.Title = v
		case "language":
			in.Language = v
		case "filename":
			in.Filename = v
		}
	}
	return nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false, nil
	case "1", "true", "yes", "on":
		return true, nil
	}
	return false, problem.BadRequest.WithDetail("burn must be true or false.")
}

// parseMaxViews reads a view limit: a whole number, or empty for none. Paste.Input.Tidy checks its range.
func parseMaxViews(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, problem.BadRequest.WithDetail("max_views must be a whole number from 1 to 1000.")
	}
	return n, nil
}

// decodeMultipart streams the form: the "file" part (or else the "content" field) is the paste, and
// the other known fields are options. Nothing but the content may be large. partName is set to the
// file part's own name.
func decodeMultipart(r *http.Request, boundary string, max int64, in *paste.Input, partName *string) error {
	if boundary == "" {
		return problem.BadRequest.WithDetail("multipart/form-data without a boundary.")
	}
	mr := multipart.NewReader(r.Body, boundary)
	opts := map[string]string{}
	var content, hash []byte
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return asMultipartError(err)
		}
		if err := readPart(part, max, in, opts, &content, &hash, partName); err != nil {
			return err
		}
	}
	if content == nil {
		return problem.Empty.WithDetail(`The form has no "file" part and no "content" field, or they are empty.`)
	}
	in.Content, in.Hash = content, hash
	return applyOptions(in, opts)
}

func readPart(part *multipart.Part, max int64, in *paste.Input, opts map[string]string, content, hash *[]byte, partName *string) error {
	defer part.Close()
	switch name := part.FormName(); name {
	case "file", "content":
		if *content != nil && name == "content" {
			return nil // a non-empty file wins over the text field
		}
		c, h, err := readContent(part, max)
		if err != nil && !errors.Is(err, problem.Empty) {
			return asMultipartError(err)
		}
		if c != nil {
			*content, *hash = c, h
			if name == "file" && in.Filename == "" {
				in.Filename, *partName = part.FileName(), part.FileName()
			}
		}
	case "expires_in", "burn", "burn_after_read", "max_views", "encryption", "title", "language", "filename":
		v, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
		if err != nil {
			return asMultipartError(err)
		}
		if len(v) > maxFieldBytes {
			return problem.BadRequest.WithDetail("The form field " + strconv.Quote(name) + " is too long.")
		}
		if name == "burn_after_read" {
			name = "burn" // one option under two names: the later field wins, as a repeated one does
		}
		opts[name] = string(v)
	}
	return nil
}

// asMultipartError keeps a size error (413) and a body cut short (400, 408), and calls anything
// else a malformed form (400).
func asMultipartError(err error) error {
	if isBodyFault(err) {
		return err
	}
	return problem.BadRequest.WithDetail("Malformed multipart form: " + err.Error())
}

// jsonCreate is the body of POST /api/v1/pastes. A null option is an absent one: encoding/json
// leaves the field at its zero value, which means the default.
type jsonCreate struct {
	Content       *string         `json:"content"`
	ExpiresIn     json.RawMessage `json:"expires_in"`
	BurnAfterRead bool            `json:"burn_after_read"`
	MaxViews      *int            `json:"max_views"`
	Title         string          `json:"title"`
	Language      string          `json:"language"`
	Filename      string          `json:"filename"`
	// Encryption is refused: an encrypted paste is binary, sent as the raw body of POST /.
	Encryption json.RawMessage `json:"encryption"`
}

// decodeJSONCreate reads a JSON create. The body may be larger than the paste limit, since JSON
// escapes text, but the content itself may not.
func decodeJSONCreate(r *http.Request, max int64) (paste.Input, error) {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "application/json" {
		return paste.Input{}, problem.MediaType.WithDetail("Send the paste as application/json.")
	}
	var body jsonCreate
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&body)
	if err == nil {
		err = jsonEnd(dec)
	}
	if err != nil {
		if isBodyFault(err) {
			return paste.Input{}, asPasteLimit(err, max)
		}
		return paste.Input{}, problem.BadRequest.WithDetail("Malformed JSON: " + err.Error())
	}
	return jsonInput(body, max)
}

// jsonEnd checks that only white space follows the value. dec.More would pass `{...}]`, and
// anything after the value that the body limit cuts off, since it reports no error.
func jsonEnd(dec *json.Decoder) error {
	_, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return errors.New("more than one value in the body")
	}
	return err
}

func jsonInput(body jsonCreate, max int64) (paste.Input, error) {
	if len(body.Encryption) > 0 && string(body.Encryption) != "null" {
		return paste.Input{}, problem.BadRequest.WithDetail("An encrypted paste is sent as the binary body of POST /, " +
			"with its format in Paste-Encryption, not in JSON (see docs/encryption.md).")
	}
	if body.Content == nil || *body.Content == "" {
		return paste.Input{}, problem.Empty.WithDetail(`The "content" field is missing or empty.`)
	}
	if int64(len(*body.Content)) > max {
		return paste.Input{}, &http.MaxBytesError{Limit: max}
	}
	expiresIn, err := jsonExpiresIn(body.ExpiresIn)
	if err != nil {
		return paste.Input{}, err
	}
	content := []byte(*body.Content)
	h := sha256.Sum256(content)
	in := paste.Input{
		Content: content, Hash: h[:], Title: body.Title, Language: body.Language,
		Filename: body.Filename, Burn: body.BurnAfterRead, ExpiresIn: expiresIn,
	}
	if body.MaxViews != nil {
		if *body.MaxViews < 1 {
			return paste.Input{}, problem.BadRequest.WithDetail("max_views must be a whole number from 1 to 1000, or null.")
		}
		in.MaxViews = *body.MaxViews
	}
	return in, in.Tidy()
}

// jsonExpiresIn accepts expires_in as a string ("1h", "never") or a number of seconds. Absent, null
// or empty, it is the default, as an empty query parameter, header or form field is.
func jsonExpiresIn(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if _, err := n.Int64(); err == nil {
			return n.String(), nil
		}
	}
	return "", problem.BadExpiry.WithDetail("expires_in must be a string such as \"1h\" or a whole number of seconds.")
}
