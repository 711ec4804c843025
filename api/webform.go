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
)

// isWebForm reports whether a POST / is the browser's create form: a form body from a client that
// prefers HTML. curl -d and curl -F send forms too, but accept anything, and keep curl's answer.
func isWebForm(r *http.Request) bool {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return (mediaType == "multipart/form-data" || mediaType == "application/x-www-form-urlencoded") && wantsHTML(r)
}

// handleWebCreate handles the create form. It answers 303 to the paste's page, with the delete
// token in a short-lived cookie for that page alone, which works without JavaScript. The Location
// is relative, so the redirect stays on the origin the form was posted to (CSP form-action).
func handleWebCreate(web *webUI) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps := web.ps
		limit := ps.cfg.MaxPasteBytes
		if err := limitBody(w, r, limit, limit+multipartOverhead); err != nil {
			ps.writeError(w, r, err)
			return
		}
		in, err := decodeWebForm(r, limit)
		if err != nil {
			web.formError(w, r, in, err)
			return
		}
		c, err := ps.create(r.Context(), in, idempotencyKey{})
		if err != nil {
			web.formError(w, r, in, err)
			return
		}
		web.setTokenCookie(w, r, c.paste.Code, c.token)
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/"+c.paste.Code, http.StatusSeeOther)
	})
}

// formError shows the form again, filled in, with what to correct; errors that are not the
// person's to correct get the error page.
func (web *webUI) formError(w http.ResponseWriter, r *http.Request, in createInput, err error) {
	p := asProblem(r, web.ps.logger, err)
	if p.status != http.StatusBadRequest {
		web.errorPage(w, r, p)
		return
	}
	v := formValues{
		Content: string(in.content), Title: in.title, Language: in.language, Filename: in.filename,
		ExpiresIn: in.expiresIn, Burn: in.burn,
	}
	web.renderForm(w, r, p.status, v, p.detail)
}

// webFormFields are the form's option fields; anything else in the form is ignored.
var webFormFields = []string{"expires_in", "burn", "title", "language", "filename"}

// decodeWebForm reads the create form, multipart (the page's own form, which can carry a file) or
// urlencoded. Even on error it returns what it read, so the form can be shown again filled in.
func decodeWebForm(r *http.Request, max int64) (createInput, error) {
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var in createInput
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
		in.content, in.hash = file, sum[:]
	}
	if err != nil {
		return in, asPasteLimit(err, max)
	}
	if len(in.content) == 0 {
		return in, errEmpty.withDetail("Write or paste some text, or choose a file.")
	}
	return in, validateOptions(&in)
}

// readWebMultipart streams the form's parts. It returns the chosen file's bytes, if any; the text
// area goes to in.content.
func readWebMultipart(r *http.Request, boundary string, max int64, in *createInput, opts map[string]string) ([]byte, error) {
	if boundary == "" {
		return nil, errBadRequest.withDetail("multipart/form-data without a boundary.")
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
	if errors.Is(err, errEmpty) {
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

func readWebText(part *multipart.Part, max int64, in *createInput) error {
	data, _, err := readContent(part, max)
	if err != nil && !errors.Is(err, errEmpty) {
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
		return errBadRequest.withDetail("The " + name + " field is too long.")
	}
	if name != "filename" || len(v) > 0 { // an empty file name keeps the chosen file's
		opts[name] = string(v)
	}
	return nil
}

func readWebURLEncoded(r *http.Request, max int64, in *createInput, opts map[string]string) error {
	if err := r.ParseForm(); err != nil {
		if isBodyFault(err) {
			return err // decodeWebForm names the paste limit
		}
		return errBadRequest.withDetail("Malformed form: " + err.Error())
	}
	form := r.PostForm
	if text := form.Get("content"); int64(len(text)) > max {
		return &http.MaxBytesError{Limit: max}
	}
	setText(in, []byte(form.Get("content")))
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
func setText(in *createInput, data []byte) {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	sum := sha256.Sum256(data)
	in.content, in.hash = data, sum[:]
}

// formValues are the create form's fields, to show the form again as it was sent.
type formValues struct {
	Content, Title, Language, Filename, ExpiresIn string
	Burn                                          bool
}

// formView is what the create form page shows.
type formView struct {
	Form      formValues
	Error     string
	Expiries  []expiryChoice
	Languages []languageChoice
	MaxSize   string
}

// renderForm shows the create form, with v's values and an error to correct, if any.
func (web *webUI) renderForm(w http.ResponseWriter, r *http.Request, status int, v formValues, problem string) {
	fv := formView{Form: v, Error: problem, MaxSize: humanBytes(web.ps.cfg.MaxPasteBytes)}
	known := slices.ContainsFunc(web.expiries, func(c expiryChoice) bool { return c.Value == v.ExpiresIn })
	for _, c := range web.expiries {
		c.Selected = v.ExpiresIn == c.Value || !known && c.Default // a refused value falls back to the default
		fv.Expiries = append(fv.Expiries, c)
	}
	for _, l := range web.languages {
		l.Selected = l.Value == v.Language
		fv.Languages = append(fv.Languages, l)
	}
	web.render(w, r, status, "index", page{Title: "New paste", Data: fv})
}

// languageChoice is one option of the form's language menu.
type languageChoice struct {
	Value, Label string
	Selected     bool
}

// languageChoices are the languages people paste most; the API accepts any of chroma's names.
var languageChoices = []languageChoice{
	{Value: "", Label: "Automatic"}, {Value: "plaintext", Label: "Plain text"},
	{Value: "bash", Label: "Shell"}, {Value: "c", Label: "C"}, {Value: "c++", Label: "C++"},
	{Value: "c#", Label: "C#"}, {Value: "css", Label: "CSS"}, {Value: "diff", Label: "Diff"},
	{Value: "docker", Label: "Dockerfile"}, {Value: "go", Label: "Go"}, {Value: "html", Label: "HTML"},
	{Value: "ini", Label: "INI"}, {Value: "java", Label: "Java"}, {Value: "javascript", Label: "JavaScript"},
	{Value: "json", Label: "JSON"}, {Value: "kotlin", Label: "Kotlin"}, {Value: "lua", Label: "Lua"},
	{Value: "make", Label: "Makefile"}, {Value: "markdown", Label: "Markdown"}, {Value: "nginx", Label: "nginx"},
	{Value: "perl", Label: "Perl"}, {Value: "php", Label: "PHP"}, {Value: "powershell", Label: "PowerShell"},
	{Value: "python", Label: "Python"}, {Value: "ruby", Label: "Ruby"}, {Value: "rust", Label: "Rust"},
	{Value: "scala", Label: "Scala"}, {Value: "sql", Label: "SQL"}, {Value: "swift", Label: "Swift"},
	{Value: "toml", Label: "TOML"}, {Value: "typescript", Label: "TypeScript"}, {Value: "xml", Label: "XML"},
	{Value: "yaml", Label: "YAML"},
}
