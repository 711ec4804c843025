package paste

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"strconv"
	"time"
)

// IdempotencyKey is a client's Idempotency-Key, bound to the client that sent it. The raw key never
// reaches the database: it is looked up by one hash and seals the delete token with another, so a
// replay can hand the token back to the client that holds the key, and a copy of the database alone
// cannot.
//
// Both hashes cover the client too (its rate-limit bucket: an address, or an IPv6 /64). A key is a
// client's own name for its request, not a secret: anyone who learns it, or picks the same one,
// would otherwise be answered the first creator's paste and delete token. Another client's key of
// the same text is another key, and makes a paste of its own.
type IdempotencyKey struct {
	Key    string // as the client sent it; empty: none
	Client string
}

// none reports whether the request carried no Idempotency-Key.
func (k IdempotencyKey) none() bool { return k.Key == "" }

// derive hashes the purpose, the client and the key, each length-prefixed, so that no two
// different pairs of client and key hash alike.
func (k IdempotencyKey) derive(purpose string) []byte {
	h := sha256.New()
	h.Write([]byte("pastebin idempotency " + purpose))
	for _, s := range []string{k.Client, k.Key} {
		_ = binary.Write(h, binary.BigEndian, uint32(len(s)))
		h.Write([]byte(s))
	}
	return h.Sum(nil)
}

// lookupHash is how the key is stored.
func (k IdempotencyKey) lookupHash() []byte { return k.derive("lookup") }

// seal encrypts the delete token with AES-256-GCM under a key only the raw Idempotency-Key gives.
func (k IdempotencyKey) seal(token string) ([]byte, error) {
	aead, err := k.aead()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, []byte(token), nil), nil
}

func (k IdempotencyKey) open(sealed []byte) (string, error) {
	aead, err := k.aead()
	if err != nil {
		return "", err
	}
	if len(sealed) < aead.NonceSize() {
		return "", errors.New("sealed token too short")
	}
	token, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], nil)
	return string(token), err
}

func (k IdempotencyKey) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(k.derive("seal"))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// fingerprint identifies a create request: same content, same options. A key reused with another
// fingerprint is refused rather than answered with someone else's paste.
func fingerprint(in Input, expiresIn time.Duration) []byte {
	h := sha256.New()
	h.Write(in.Hash)
	fields := []string{in.Title, in.Language, in.Filename, strconv.FormatBool(in.MaxViews == 1)}
	if in.MaxViews > 1 || in.Encryption != "" { // only then: requests from before keep their fingerprints
		fields = append(fields, strconv.Itoa(in.MaxViews), in.Encryption)
	}
	for _, s := range fields {
		_ = binary.Write(h, binary.BigEndian, uint32(len(s)))
		h.Write([]byte(s))
	}
	_ = binary.Write(h, binary.BigEndian, int64(expiresIn))
	return h.Sum(nil)
}

func sameFingerprint(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
