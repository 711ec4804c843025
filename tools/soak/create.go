package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// createReq is one paste the load asks for. Its retries carry the same Idempotency-Key, so a
// create whose answer was lost is answered again rather than made twice. The key is also the
// paste's title: at the end, two pastes with one title are a create made twice.
type createReq struct {
	body     []byte
	lifetime int // seconds; 0: never
	burn     bool
	key      string
	viaJSON  bool // the JSON API rather than curl's raw POST
}

func newCreateReq(r *rand.Rand, pool contentPool) createReq {
	return createReq{
		body: pool.pick(r), lifetime: pickLifetime(r), burn: r.IntN(100) < 15,
		key: fmt.Sprintf("soak-%016x%016x", r.Uint64(), r.Uint64()), viaJSON: r.IntN(2) == 0,
	}
}

func (c createReq) request(ctx context.Context, base string) (*http.Request, error) {
	var expires any = c.lifetime
	if c.lifetime == 0 {
		expires = "never"
	}
	var req *http.Request
	var err error
	if c.viaJSON {
		payload, _ := json.Marshal(map[string]any{"content": string(c.body), "expires_in": expires, "burn_after_read": c.burn,
			"title": c.key})
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/pastes", bytes.NewReader(payload))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	} else {
		q := url.Values{"expires_in": {fmt.Sprint(expires)}, "burn": {strconv.FormatBool(c.burn)}, "title": {c.key}}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/?"+q.Encode(), bytes.NewReader(c.body))
		if err == nil {
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("Accept", "application/json")
		}
	}
	if err == nil {
		req.Header.Set("Idempotency-Key", c.key)
	}
	return req, err
}

// created is the part of a create's answer the soak keeps.
type created struct {
	Code          string     `json:"code"`
	DeleteToken   string     `json:"delete_token"`
	ExpiresAt     *time.Time `json:"expires_at"`
	BurnAfterRead bool       `json:"burn_after_read"`
	Size          int64      `json:"size"`
}

// createOutcome is what a create came to.
type createOutcome int

const (
	createOK      createOutcome = iota
	createFailed                // definitely not made: 503, or no process took the request
	createUnknown               // an answer was lost: it may have been made
)

// judgeCreate checks a create's answer. first is when its first attempt left. It returns the paste
// made, or nil, and a violation, or "".
func judgeCreate(c createReq, a answer, lost bool, first time.Time) (*paste, createOutcome, string) {
	switch {
	case a.err != nil || a.status == http.StatusServiceUnavailable:
		if lost {
			return nil, createUnknown, ""
		}
		return nil, createFailed, ""
	case a.status == http.StatusGone && lost:
		return nil, createUnknown, "" // the lost attempt made it, and it expired before the retry
	case a.status != http.StatusCreated:
		return nil, createFailed, fmt.Sprintf("create answered %d: %s", a.status, snippet(a.body))
	}
	var got created
	if err := json.Unmarshal(a.body, &got); err != nil || got.Code == "" || got.DeleteToken == "" {
		return nil, createFailed, fmt.Sprintf("create answered 201 with an unusable body (%v): %s", err, snippet(a.body))
	}
	p := &paste{code: got.Code, token: got.DeleteToken, body: c.body, burn: c.burn}
	if got.ExpiresAt != nil {
		p.expiresAt = *got.ExpiresAt
	}
	return p, createOK, c.check(got, first, a.received)
}

// check compares a created paste with what was asked: its size, burn flag and an expiry its
// lifetime after some moment between the first attempt and the answer.
func (c createReq) check(got created, first, received time.Time) string {
	life := time.Duration(c.lifetime) * time.Second
	switch {
	case got.Size != int64(len(c.body)) || got.BurnAfterRead != c.burn:
		return fmt.Sprintf("paste %s created with size %d and burn %v, asked %d and %v", got.Code, got.Size,
			got.BurnAfterRead, len(c.body), c.burn)
	case c.lifetime == 0 && got.ExpiresAt != nil:
		return fmt.Sprintf("paste %s asked never to expire, expires at %s", got.Code, stamp(*got.ExpiresAt))
	case c.lifetime > 0 && (got.ExpiresAt == nil || got.ExpiresAt.Before(first.Add(life-clockMargin)) ||
		got.ExpiresAt.After(received.Add(life+clockMargin))):
		return fmt.Sprintf("paste %s asked to live %ds, got expiry %v (asked at %s, answered at %s)", got.Code,
			c.lifetime, got.ExpiresAt, stamp(first), stamp(received))
	}
	return ""
}
