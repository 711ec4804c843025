package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

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
	rest, err := parseClientArgs(fs, args, getenv, "URL")
	if err != nil {
		return err
	}
	link, err := parseLink(rest[0])
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

// deleteTries bounds the retries of a delete the server could not confirm yet (503 with
// Retry-After): it committed, and a retry confirms it.
const deleteTries = 3

// runDelete deletes the paste at URL with its delete token. A retried delete answers as the first.
func runDelete(ctx context.Context, args []string, getenv func(string) string, cio clientIO) error {
	fs := newFlagSet("delete", "Delete the paste at URL with its delete TOKEN.", cio.err)
	rest, err := parseClientArgs(fs, args, getenv, "URL", "TOKEN")
	if err != nil {
		return err
	}
	link, err := parseLink(rest[0])
	if err != nil {
		return err
	}
	client := newHTTPClient()
	for try := 1; ; try++ {
		wait, err := deleteOnce(ctx, client, link, rest[1])
		if wait == 0 || try == deleteTries {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// deleteOnce sends the delete. A delete the server committed but could not confirm yet answers
// how long to wait before sending it again, with its error.
func deleteOnce(ctx context.Context, client *http.Client, link pasteLink, token string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, link.metaURL(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return 0, nil
	}
	wait, _ := deleteUnconfirmed(resp)
	return wait, serverError(resp)
}

// deleteUnconfirmed reports whether resp is a delete the server committed but could not confirm yet,
// and how long it asks to wait (at most 10 s).
func deleteUnconfirmed(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 0 {
		return 0, false
	}
	return min(time.Duration(secs)*time.Second, 10*time.Second), true
}
