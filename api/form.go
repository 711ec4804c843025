package api

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/api/web"
	"pastebin/paste"
)

// isWebForm reports whether a POST / is the browser's create form: a form body from a client that
// prefers HTML. curl -d and curl -F send forms too, but accept anything, and keep curl's answer.
func isWebForm(r *http.Request) bool {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return (mediaType == "multipart/form-data" || mediaType == "application/x-www-form-urlencoded") && request.WantsHTML(r)
}

// webFormDecoder reads the create form for web.HandleCreate: its body bounded as curl's creates
// are, then decodeWebForm.
func webFormDecoder(maxBytes int64) web.Decoder {
	return func(w http.ResponseWriter, r *http.Request) (paste.Input, error) {
		if err := limitBody(w, r, maxBytes, maxBytes+multipartOverhead); err != nil {
			return paste.Input{}, err
		}
		return decodeWebForm(r, maxBytes)
	}
}

// webFormFields are the form's option fields; anything else in the form is ignored.
var webFormFields = []string{"expires_in", "burn", "max_views", "title", "language", "filename"}

// decodeWebForm reads the create form, multipart (the page's own form, which can carry a file) or
// urlencoded. Even on error it returns what it read, so the form can be shown again filled in.
func decodeWebForm(r *http.Request, max int64) (paste.Input, error) {
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var in paste.Input
	var file []byte
	opts := map[string]string{}
	var err error
	if mediaType == "multipart/form-data" {
		file, err = readWebMultipart(r, params["boundary"], max, &in, opts)
	} else {
		err = readWebURLEncoded(r, max, &in, opts)
	}
	if err == nil {
		err = applyOptions(&in, opts)
	}
	if file != nil { // a chosen file wins over the text area, and names the paste unless one was typed
		sum := sha256.Sum256(file)
		in.Content, in.Hash = file, sum[:]
	}
	if err != nil {
		return in, asPasteLimit(err, max)
	}
	if len(in.Content) == 0 {
		return in, problem.Empty.WithDetail("Write or paste some text, or choose a file.")
	}
	return in, in.Tidy()
}

// readWebMultipart streams the form's parts. It returns the chosen file's bytes, if any; the text
// area goes to in.Content.
func readWebMultipart(r *http.Request, boundary string, max int64, in *paste.Input, opts map[string]string) ([]byte, error) {
	if boundary == "" {
		return nil, problem.BadRequest.WithDetail("multipart/form-data without a boundary.")
	}
	mr := multipart.NewReader(r.Body, boundary)
	var file []byte
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return file, nil
		}
		if err != nil {
			return file, asMultipartError(err)
		}
		switch name := part.FormName(); name {
		case "file":
			file, err = readWebFile(part, max, opts)
		case "content":
			err = readWebText(part, max, in)
		case "creator_key":
			in.CreatorKey, err = readWebKey(part)
		default:
			err = readWebField(part, name, opts)
		}
		part.Close()
		if err != nil {
			return file, err
		}
	}
}

func readWebFile(part *multipart.Part, max int64, opts map[string]string) ([]byte, error) {
	data, _, err := readContent(part, max)
	if errors.Is(err, problem.Empty) {
		return nil, nil // no file chosen: browsers still send the empty part
	}
	if err != nil {
		return nil, asMultipartError(err)
	}
	if opts["filename"] == "" {
		opts["filename"] = part.FileName()
	}
	return data, nil
}

func readWebText(part *multipart.Part, max int64, in *paste.Input) error {
	data, _, err := readContent(part, max)
	if err != nil && !errors.Is(err, problem.Empty) {
		return asMultipartError(err)
	}
	setText(in, data)
	return nil
}

func readWebField(part *multipart.Part, name string, opts map[string]string) error {
	if !slices.Contains(webFormFields, name) {
		return nil
	}
	v, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return asMultipartError(err)
	}
	if len(v) > maxFieldBytes {
		return problem.BadRequest.WithDetail("The " + name + " field is too long.")
	}
	if name != "filename" || len(v) > 0 { // an empty file name keeps the chosen file's
		opts[name] = string(v)
	}
	return nil
}

// readWebKey reads the form's creator key field; empty when the browser keeps the key already.
func readWebKey(part *multipart.Part) (string, error) {
	v, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", asMultipartError(err)
	}
	if len(v) > maxFieldBytes {
		return "", problem.BadRequest.WithDetail("The creator key field is too long.")
	}
	return strings.TrimSpace(string(v)), nil
}

func readWebURLEncoded(r *http.Request, max int64, in *paste.Input, opts map[string]string) error {
	if err := r.ParseForm(); err != nil {
		if isBodyFault(err) {
			return err // decodeWebForm names the paste limit
		}
		return problem.BadRequest.WithDetail("Malformed form: " + err.Error())
	}
	form := r.PostForm
	if text := form.Get("content"); int64(len(text)) > max {
		return &http.MaxBytesError{Limit: max}
	}
	setText(in, []byte(form.Get("content")))
	in.CreatorKey = strings.TrimSpace(form.Get("creator_key"))
	copyFields(form, opts)
	return nil
}

func copyFields(form url.Values, opts map[string]string) {
	for _, f := range webFormFields {
		if v := form.Get(f); v != "" {
			opts[f] = v
		}
	}
}

// setText takes the text area's content. Browsers send every line break of a text area as CRLF,
// whatever was typed or pasted, so the line breaks are put back to what the page showed.
func setText(in *paste.Input, data []byte) {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	sum := sha256.Sum256(data)
	in.Content, in.Hash = data, sum[:]
}
