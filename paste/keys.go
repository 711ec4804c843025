package paste

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"pastebin/store"
)

// CreateAccess says who may create: anyone (AccessOpen), or only the holders of a creator key
// (AccessKeys). Reads, owners' deletes and burns are the same either way.
type CreateAccess string

// The values of PASTEBIN_CREATE_ACCESS.
const (
	AccessOpen CreateAccess = "open"
	AccessKeys CreateAccess = "keys"
)

// ParseCreateAccess reads a CreateAccess; "" is AccessOpen.
func ParseCreateAccess(s string) (CreateAccess, error) {
	switch a := CreateAccess(s); a {
	case "":
		return AccessOpen, nil
	case AccessOpen, AccessKeys:
		return a, nil
	}
	return "", fmt.Errorf("create access %q: want open or keys", s)
}

// ErrCreatorKey says a create needs a creator key it did not bring, or brought one that is unknown
// or revoked. Nothing was written.
var ErrCreatorKey = errors.New("a valid creator key is required")

// CreatorKeyError is ErrCreatorKey with what was wrong, for the client.
type CreatorKeyError struct {
	Detail string
}

func (e *CreatorKeyError) Error() string        { return "creator key: " + e.Detail }
func (e *CreatorKeyError) Is(target error) bool { return target == ErrCreatorKey }

var (
	errKeyMissing = &CreatorKeyError{Detail: "This service creates pastes only for holders of a creator key: send it as Authorization: Bearer <key>."}
	errKeyInvalid = &CreatorKeyError{Detail: "This creator key is unknown or revoked; nothing was stored."}
)

// KeyPrefix begins every creator key, so that one found in a log or a repository is recognized.
const KeyPrefix = "pbk_"

// IsCreatorKey reports whether secret has the form of a creator key, whether or not it is one.
func IsCreatorKey(secret string) bool { return strings.HasPrefix(secret, KeyPrefix) }

// KeyCacheTTL is how long a replica trusts what it read of a key: a revocation made elsewhere
// holds here within this, plus one query (docs/design.md, "Creator keys"). The replica that revokes
// drops its entry at once. A create's own transaction checks the key again in any case (the cache
// only spares the database a query per create and keeps the upload of a refused create from
// happening): no create commits after its key's revocation.
const KeyCacheTTL = 2 * time.Second

// keyCacheMax bounds the keys a replica remembers, unknown ones included, so that a client sending
// random keys cannot grow it without end.
const keyCacheMax = 10000

// ActiveKey is a creator key that may create: its id and its create rate.
type ActiveKey struct {
	ID         int64
	CreateRate string
}

// Keys mints, checks and revokes creator keys, and takes down what a key created. Each process
// keeps its own short cache of the keys it checked.
type Keys struct {
	store   *store.Store
	remover *Remover
	now     func() time.Time

	mu      sync.Mutex
	entries map[[32]byte]keyEntry
}

type keyEntry struct {
	key     store.CreatorKey
	known   bool
	checked time.Time
}

// NewKeys returns the creator keys of s; rm runs the takedowns by key.
func NewKeys(s *store.Store, rm *Remover, now func() time.Time) *Keys {
	return &Keys{store: s, remover: rm, now: now, entries: map[[32]byte]keyEntry{}}
}

// Check answers the key whose secret is secret, if it may create; else a *CreatorKeyError. Only
// the SHA-256 of the secret is looked up and kept; it is compared with the stored one in constant
// time.
func (k *Keys) Check(ctx context.Context, secret string) (ActiveKey, error) {
	if !IsCreatorKey(secret) || len(secret) > 200 {
		return ActiveKey{}, errKeyInvalid
	}
	hash := sha256.Sum256([]byte(secret))
	e, err := k.entry(ctx, hash)
	if err != nil {
		return ActiveKey{}, err
	}
	if !e.known || e.key.Revoked() {
		return ActiveKey{}, errKeyInvalid
	}
	return ActiveKey{ID: e.key.ID, CreateRate: e.key.CreateRate}, nil
}

func (k *Keys) entry(ctx context.Context, hash [32]byte) (keyEntry, error) {
	now := k.now()
	k.mu.Lock()
	e, ok := k.entries[hash]
	k.mu.Unlock()
	if ok && now.Sub(e.checked) < KeyCacheTTL {
		return e, nil
	}
	key, err := k.store.KeyByHash(ctx, hash[:])
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return keyEntry{}, err
	}
	e = keyEntry{key: key, known: err == nil && subtle.ConstantTimeCompare(key.Hash, hash[:]) == 1, checked: now}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.entries) >= keyCacheMax {
		clear(k.entries)
	}
	k.entries[hash] = e
	return e, nil
}

// forget drops what this process knows of the key id: a revocation made here holds here at once.
func (k *Keys) forget(id int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for h, e := range k.entries {
		if e.known && e.key.ID == id {
			delete(k.entries, h)
		}
	}
}

// Mint makes a new creator key with a label and a create rate ("" for the default): it answers the
// key and, this once, its secret.
func (k *Keys) Mint(ctx context.Context, label, rate string, by store.Actor) (store.CreatorKey, string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return store.CreatorKey{}, "", fmt.Errorf("draw a creator key: %w", err)
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	hash := sha256.Sum256([]byte(secret))
	key, err := k.store.CreateKey(ctx, hash[:], label, rate, by)
	if err != nil {
		return key, "", err
	}
	return key, secret, nil
}

// Revoke revokes the key id: at once on this replica, within KeyCacheTTL on the others.
func (k *Keys) Revoke(ctx context.Context, id int64, reason string, by store.Actor) (store.Revocation, error) {
	rev, err := k.store.RevokeKey(ctx, id, reason, by)
	if err == nil {
		k.forget(id)
	}
	return rev, err
}

// TakeDown takes down everything the key created, in one transaction (store.TakeDownKey), then
// marks every paste it took down gone in the cache before it returns (invariant 5), as
// Remover.TakeDown does.
func (k *Keys) TakeDown(ctx context.Context, t store.KeyTakedown, by store.Actor) (store.KeyTakedownResult, error) {
	res, err := k.store.TakeDownKey(ctx, t, by)
	if err != nil {
		return res, err
	}
	if t.Revoke {
		k.forget(t.ID)
	}
	return res, k.remover.afterCommit(ctx, res.Codes, store.TakedownReason(t.Legal), res.Released, true)
}
