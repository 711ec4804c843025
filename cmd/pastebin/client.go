package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// The commands that speak HTTP to a server, as curl would: put, get and delete. They read no
// setting of the service's, and all their flags but --server and --key are command line only
// (commandLineOnly): a stray PASTEBIN_BURN must never burn every paste.

// clientIO is what a client command reads and writes: stdin (a paste to put), stdout (the URL, the
// text), stderr (the delete token, notes), and the terminal to ask a password on, if any.
type clientIO struct {
	in       io.Reader
	out, err io.Writer
	// password asks for a password without echoing it; nil when there is no terminal to ask on.
	password func(prompt string) (string, error)
}

// terminalIO is clientIO of this process: the password is asked for on stdin when it is a
// terminal, with the prompt on stderr.
func terminalIO(stdout io.Writer) clientIO {
	cio := clientIO{in: os.Stdin, out: stdout, err: os.Stderr}
	if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
		cio.password = func(prompt string) (string, error) {
			fmt.Fprint(os.Stderr, prompt)
			pw, err := term.ReadPassword(fd)
			fmt.Fprintln(os.Stderr)
			return string(pw), err
		}
	}
	return cio
}

// defaultServer is where put sends pastes unless --server or PASTEBIN_SERVER says otherwise.
const defaultServer = "http://localhost:8080"

// clientTimeout bounds each request of a client command, the upload of a large paste included.
const clientTimeout = 2 * time.Minute

// newHTTPClient is the client commands' HTTP client: proxies from the environment, as curl.
func newHTTPClient() *http.Client { return &http.Client{Timeout: clientTimeout} }

// pasteLink is a paste's URL as a reader was given it: the server it is on, its code, and the key
// in its fragment when it is encrypted.
type pasteLink struct {
	base string // scheme, host and any path before the code
	code string
	key  string // the fragment: an encrypted paste's key, "" for none
}

// parseLink reads a paste's page or raw URL: http://host/CODE, http://host/raw/CODE, either with
// #KEY.
func parseLink(raw string) (pasteLink, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return pasteLink{}, fmt.Errorf("%q is not a paste's http or https URL", raw)
	}
	path := strings.TrimSuffix(u.Path, "/")
	i := strings.LastIndex(path, "/")
	if i < 0 || path[i+1:] == "" {
		return pasteLink{}, fmt.Errorf("%q names no paste", raw)
	}
	prefix := strings.TrimSuffix(path[:i], "/raw")
	return pasteLink{base: u.Scheme + "://" + u.Host + prefix, code: path[i+1:], key: u.Fragment}, nil
}

func (l pasteLink) rawURL() string  { return l.base + "/raw/" + url.PathEscape(l.code) }
func (l pasteLink) metaURL() string { return l.base + "/api/v1/pastes/" + url.PathEscape(l.code) }

// pasteMeta is the part of a paste's metadata (GET /api/v1/pastes/{code}) the commands use.
type pasteMeta struct {
	URL         string `json:"url"`
	DeleteToken string `json:"delete_token"`
	MaxViews    int    `json:"max_views"`
	ViewsLeft   int    `json:"views_left"`
	Encryption  string `json:"encryption"`
}

// serverError is an answer that was not a success: its status and the problem's detail, if any.
func serverError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(body))
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/problem+json" {
		var p struct{ Title, Detail string }
		if json.Unmarshal(body, &p) == nil {
			msg = strings.TrimSpace(p.Title + ". " + p.Detail)
		}
	}
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	return fmt.Errorf("the server answered %s: %s", resp.Status, msg)
}

// do sends req and returns the answer if its status is want; any other is an error.
func do(client *http.Client, req *http.Request, want int) (*http.Response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		defer resp.Body.Close()
		return nil, serverError(resp)
	}
	return resp, nil
}

// parseClientArgs parses the flags of a client command, which come before its n arguments.
func parseClientArgs(fs *flag.FlagSet, args []string, getenv func(string) string, names ...string) ([]string, error) {
	if err := parseFlags(fs, args, getenv); err != nil {
		return nil, err
	}
	if fs.NArg() != len(names) {
		fs.Usage()
		return nil, fmt.Errorf("want %s after the flags, got %d arguments", strings.Join(names, " and "), fs.NArg())
	}
	return fs.Args(), nil
}

// parseLinkArgs parses a command's flags and then its arguments, names, the first of which is a
// paste's URL; it returns the paste's link and the other arguments.
func parseLinkArgs(fs *flag.FlagSet, args []string, getenv func(string) string, names ...string) (pasteLink, []string, error) {
	rest, err := parseClientArgs(fs, args, getenv, names...)
	if err != nil {
		return pasteLink{}, nil, err
	}
	link, err := parseLink(rest[0])
	return link, rest[1:], err
}

// errNoPassword says a paste needs a password that nothing gave.
var errNoPassword = errors.New("this paste needs a password: give --password, or run on a terminal to be asked")
