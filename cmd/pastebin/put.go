package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"pastebin/envelope"
)

// putFlags are put's flags. Only server and key may come from the environment.
type putFlags struct {
	server, key         string
	encrypt, burn       bool
	password, expiresIn string
	title               string
	maxViews            int
}

func (p *putFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.server, "server", defaultServer, "the pastebin to create the paste on")
	fs.StringVar(&p.key, "key", "", "a creator key, sent as Authorization: Bearer")
	fs.BoolVar(&p.encrypt, "encrypt", false, "encrypt here; the key goes in the URL's fragment only (docs/encryption.md)")
	fs.StringVar(&p.password, "password", "", "with -encrypt: a password the reader needs besides the URL")
	fs.BoolVar(&p.burn, "burn", false, "burn after reading: one view")
	fs.IntVar(&p.maxViews, "max-views", 0, "the number of views, 1 to 1000, each taken by a POST (0: no limit)")
	fs.StringVar(&p.expiresIn, "expires-in", "", "how long the paste lives: 10m, 1h, 1d, 1w, never (default: the server's)")
	fs.StringVar(&p.title, "title", "", "the paste's title")
}

// runPut creates a paste from a file, or stdin for "-", and prints its URL; the delete token goes
// to stderr, so that url=$(pastebin put f) keeps only the URL.
func runPut(ctx context.Context, args []string, getenv func(string) string, cio clientIO) error {
	var p putFlags
	fs := newFlagSet("put", "Create a paste from FILE, or from stdin with -, and print its URL; the delete token\n"+
		"goes to stderr. Flags come before FILE.", cio.err)
	p.register(fs)
	rest, err := parseClientArgs(fs, args, getenv, "FILE")
	if err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	text, name, err := readPasteFile(rest[0], cio.in)
	if err != nil {
		return err
	}
	body, query, key, err := p.prepare(text, name)
	if err != nil {
		return err
	}
	created, err := p.create(ctx, body, query)
	if err != nil {
		return err
	}
	link := created.URL
	if key != nil {
		link += "#" + envelope.EncodeKey(key)
	}
	fmt.Fprintln(cio.out, link)
	fmt.Fprintln(cio.err, created.DeleteToken)
	return nil
}

func (p *putFlags) check() error {
	switch {
	case p.password != "" && !p.encrypt:
		return errors.New("-password encrypts the paste: add -encrypt")
	case p.burn && p.maxViews != 0 && p.maxViews != 1:
		return errors.New("-burn is -max-views 1: give one or the other")
	}
	if p.burn {
		p.maxViews = 1
	}
	return nil
}

// readPasteFile reads the paste, and the file name it is created under ("" for stdin).
func readPasteFile(name string, stdin io.Reader) ([]byte, string, error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		return b, "", err
	}
	b, err := os.ReadFile(name)
	return b, filepath.Base(name), err
}

// prepare returns the body and the options of the create. Encrypted, the title and the file name
// go inside the envelope, and only its format goes beside it.
func (p *putFlags) prepare(text []byte, filename string) ([]byte, url.Values, []byte, error) {
	q := url.Values{}
	if p.expiresIn != "" {
		q.Set("expires_in", p.expiresIn)
	}
	if p.maxViews != 0 {
		q.Set("max_views", strconv.Itoa(p.maxViews))
	}
	if !p.encrypt {
		if p.title != "" {
			q.Set("title", p.title)
		}
		if filename != "" {
			q.Set("filename", filename)
		}
		return text, q, nil, nil
	}
	body, format, key, err := envelope.Seal(envelope.Paste{Title: p.title, Filename: filename, Text: text}, p.password)
	if err != nil {
		return nil, nil, nil, err
	}
	q.Set("encryption", format.String())
	return body, q, key, nil
}

// create sends the paste, options as query parameters (they carry any text as UTF-8).
func (p *putFlags) create(ctx context.Context, body []byte, q url.Values) (pasteMeta, error) {
	target := strings.TrimSuffix(p.server, "/") + "/?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return pasteMeta{}, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Accept", "application/json")
	if p.key != "" {
		req.Header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := do(newHTTPClient(), req, http.StatusCreated)
	if err != nil {
		return pasteMeta{}, err
	}
	defer resp.Body.Close()
	var created pasteMeta
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || created.URL == "" {
		return pasteMeta{}, fmt.Errorf("the server's answer is not a created paste: %v", err)
	}
	return created, nil
}
