package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/cache"
	"pastebin/paste"
)

// defaultKeyRate is a creator key's create rate when its own cannot be read: the one a key is given
// when minted without one (migrations/00053_creator_keys.sql).
var defaultKeyRate = Rate{Requests: 120, Window: time.Minute}

// keyRate counts the creates of each creator key against the key's own rate, across replicas (a
// cache.Limiter, as the clients' rates are), instead of against its client's address.
type keyRate struct {
	keys    *paste.Keys
	access  paste.CreateAccess
	limiter *cache.Limiter
}

// guard answers whether the create r was handled here: refused for a bad key in its header (401,
// before a byte of its body is read), or passed on to next under its key's rate. A request without
// a key, or with the form's cookie holding one that no longer creates, is not handled here: its
// address's rate counts, and the create itself answers for the key (the form asks for it again).
func (k *keyRate) guard(w http.ResponseWriter, r *http.Request, l *limits, writeError func(http.ResponseWriter, *http.Request, error), next http.Handler) bool {
	secret, fromHeader := request.CreatorKey(r)
	if secret == "" || k.access != paste.AccessKeys && !paste.IsCreatorKey(secret) {
		return false // an open instance ignores bearer tokens that are no creator keys (paste.Creator)
	}
	key, err := k.keys.Check(r.Context(), secret)
	if err != nil && !fromHeader {
		return false
	}
	if err != nil {
		writeError(w, r, err)
		return true
	}
	rate, perr := ParseRate(key.CreateRate)
	if perr != nil {
		rate = defaultKeyRate
	}
	if !rate.On() {
		next.ServeHTTP(w, r)
		return true
	}
	v := k.limiter.Allow(r.Context(), strconv.FormatInt(key.ID, 10), cache.Limit{Tokens: rate.Requests, Per: rate.Window}, 1)
	setRateHeaders(w.Header(), v, rate)
	if !v.Allowed {
		l.refused.WithLabelValues("key_create_rate").Inc()
		writeError(w, r, keyRateLimited(rate, v.RetryAfter))
		return true
	}
	next.ServeHTTP(w, r)
	return true
}

// keyRateLimited is the answer to a creator key over its rate.
func keyRateLimited(rate Rate, retry time.Duration) *problem.Problem {
	retry = max(retry, time.Second)
	return problem.RateLimited.WithDetail(fmt.Sprintf("Too many pastes created with this creator key: at most %d every %s. Try again in %d seconds.",
		rate.Requests, paste.FormatDuration(rate.Window), problem.RetrySeconds(retry))).WithRetryAfter(retry)
}
