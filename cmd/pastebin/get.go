package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"pastebin/envelope"
)

// runGet prints a paste's text. A burn or view-limited paste is read with the POST that takes one
// of its views; an encrypted one is decrypted with the key in the URL's fragment and, if it has
// one, its password (-password, or asked for on a terminal). Everything that could fail before
// (a missing key, a missing password) fails before a view is taken.
func runGet(ctx context.Context, args []string, getenv func(string) string, cio clientIO) error {
	fs := newFlagSet("get", "Print the text of the paste at URL (its page or raw URL, with its #key when it is\n"+
		"encrypted). Flags come before URL.", cio.err)
	password := fs.String("password", "", "the password of an encrypted paste (default: asked for on a terminal)")
	link, _, err := parseLinkArgs(fs, args, getenv, "URL")
	if err != nil {
		return err
	}
	client := newHTTPClient()
	meta, err := fetchMeta(ctx, client, link)
	if err != nil {
		return err
	}
	sealed, err := prepareOpen(meta, link, *password, cio)
	if err != nil {
		return err
	}
	body, err := fetchText(ctx, client, link, meta.MaxViews > 0)
	if err != nil {
		return err
	}
	if sealed != nil {
		if body, err = sealed.open(body, cio, meta.MaxViews > 0); err != nil {
			return err
		}
	}
	_, err = cio.out.Write(body)
	return err
}

func fetchMeta(ctx context.Context, client *http.Client, link pasteLink) (pasteMeta, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link.metaURL(), nil)
	if err != nil {
		return pasteMeta{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := do(client, req, http.StatusOK)
	if err != nil {
		return pasteMeta{}, err
	}
	defer resp.Body.Close()
	var m pasteMeta
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return pasteMeta{}, fmt.Errorf("the paste's metadata: %w", err)
	}
	return m, nil
}

// fetchText reads the raw bytes: with the POST that takes a view when take is set.
func fetchText(ctx context.Context, client *http.Client, link pasteLink, take bool) ([]byte, error) {
	method := http.MethodGet
	if take {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, link.rawURL(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := do(client, req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// sealedPaste is what opening an encrypted paste takes: its format, its key and a password.
type sealedPaste struct {
	format   envelope.Format
	key      []byte
	password string
}

// prepareOpen checks, before any view is taken, that an encrypted paste can be opened: a key in
// the link, a format this command reads, and a password if it needs one. nil: not encrypted.
func prepareOpen(meta pasteMeta, link pasteLink, password string, cio clientIO) (*sealedPaste, error) {
	if meta.Encryption == "" {
		return nil, nil
	}
	if link.key == "" {
		return nil, errors.New("this paste is encrypted, and the URL has no #key after it: give the whole link")
	}
	s := &sealedPaste{password: password}
	var err error
	if s.format, err = envelope.ParseFormat(meta.Encryption); err != nil {
		return nil, err
	}
	if s.key, err = envelope.DecodeKey(link.key); err != nil {
		return nil, err
	}
	if s.format.NeedsPassword() && s.password == "" {
		if cio.password == nil {
			return nil, errNoPassword
		}
		if s.password, err = cio.password("Password: "); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// passwordTries is how often a wrong password is asked for again on a terminal: the ciphertext is
// in hand, and a burn paste cannot be fetched again.
const passwordTries = 3

// open decrypts body, asking again on a terminal for a password that was wrong.
func (s *sealedPaste) open(body []byte, cio clientIO, taken bool) ([]byte, error) {
	for try := 1; ; try++ {
		p, err := envelope.Open(body, s.format, s.key, s.password)
		if err == nil {
			return p.Text, nil
		}
		if !errors.Is(err, envelope.ErrWrongKey) || !s.format.NeedsPassword() || cio.password == nil || try == passwordTries {
			if taken {
				err = fmt.Errorf("%w (the view this read took is gone)", err)
			}
			return nil, err
		}
		fmt.Fprintln(cio.err, "Wrong key or password.")
		if s.password, err = cio.password("Password: "); err != nil {
			return nil, err
		}
	}
}
