package main

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// deleteTries bounds the retries of a delete the server could not confirm yet (503 with
// Retry-After): it committed, and a retry confirms it.
const deleteTries = 3

// runDelete deletes the paste at URL with its delete token. A retried delete answers as the first.
func runDelete(ctx context.Context, args []string, getenv func(string) string, cio clientIO) error {
	fs := newFlagSet("delete", "Delete the paste at URL with its delete TOKEN.", cio.err)
	link, rest, err := parseLinkArgs(fs, args, getenv, "URL", "TOKEN")
	if err != nil {
		return err
	}
	client := newHTTPClient()
	for try := 1; ; try++ {
		wait, err := deleteOnce(ctx, client, link, rest[0])
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
