package api

import (
	"net/http"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/paste"
)

// readIdempotencyKey reads the optional Idempotency-Key header, bound to the client that sent it
// (paste.IdempotencyKey). Keys must be long enough not to be guessed, since a matching key and
// request replay the first answer, delete token included.
func readIdempotencyKey(r *http.Request) (paste.IdempotencyKey, error) {
	k := r.Header.Get("Idempotency-Key")
	if k == "" {
		return paste.IdempotencyKey{}, nil
	}
	if len(k) < 16 || len(k) > 255 {
		return paste.IdempotencyKey{}, problem.BadIdempotency.WithDetail("Idempotency-Key must be 16 to 255 characters; a random UUID is a good choice.")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return paste.IdempotencyKey{}, problem.BadIdempotency.WithDetail("Idempotency-Key must be printable ASCII without spaces.")
		}
	}
	return paste.IdempotencyKey{Key: k, Client: request.ClientKey(r.Context())}, nil
}
