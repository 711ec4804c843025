// Package envelope is the format of end-to-end encrypted pastes (docs/encryption.md): a paste's
// text, title, file name and language sealed with AES-256-GCM under a random key that only the
// link's fragment carries, and optionally a password mixed in with PBKDF2-SHA-256. The command line
// seals and opens pastes with it; the server only checks the shape of what a creator sends
// (ParseFormat, Format.MinBodySize), never its content. The browser's implementation is
// api/site/static/e2e.js, and tests prove that the two read each other's pastes.
package envelope

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The key derivations a format may name.
const (
	KDFNone   = "none"          // the link's key is the AES key
	KDFPBKDF2 = "pbkdf2-sha256" // the AES key is PBKDF2-HMAC-SHA256 of the link's key and a password
)

// Iteration counts of PBKDF2. The least is OWASP's advice for PBKDF2-HMAC-SHA256 (Password
// Storage Cheat Sheet, 2023 onwards); the most keeps a hostile creator from making a reader's
// browser work for minutes.
const (
	MinIterations     = 600_000
	MaxIterations     = 10_000_000
	DefaultIterations = MinIterations
)

// MaxFormatLength bounds the Paste-Encryption value a server accepts and stores.
const MaxFormatLength = 100

// versionByte starts every body of format v1.
const versionByte = 0x01

// Sizes of the body's parts.
const (
	KeySize   = 32 // the link's key, and AES-256's
	saltSize  = 16 // PBKDF2's salt, only with KDFPBKDF2
	nonceSize = 12 // AES-GCM's standard nonce
	tagSize   = 16 // AES-GCM's tag
)

// Format is the format of one encrypted paste, as the Paste-Encryption header names it.
type Format struct {
	KDF        string // KDFNone or KDFPBKDF2
	Iterations int    // PBKDF2's iteration count; 0 with KDFNone
}

// ErrFormat says a Paste-Encryption value is not one of this format's.
var ErrFormat = errors.New("not an encryption format of this service")

// ParseFormat reads a Paste-Encryption value: "v1; kdf=none" or "v1; kdf=pbkdf2-sha256;
// iter=600000". Space around the semicolons is optional; each parameter appears once.
func ParseFormat(s string) (Format, error) {
	if len(s) > MaxFormatLength {
		return Format{}, fmt.Errorf("%w: longer than %d bytes", ErrFormat, MaxFormatLength)
	}
	parts := strings.Split(s, ";")
	if strings.Trim(parts[0], " \t") != "v1" {
		return Format{}, fmt.Errorf("%w: the version is not v1", ErrFormat)
	}
	params := map[string]string{}
	for _, p := range parts[1:] {
		name, value, ok := strings.Cut(strings.Trim(p, " \t"), "=")
		if _, dup := params[name]; !ok || dup || value == "" {
			return Format{}, fmt.Errorf("%w: %q is not one name=value", ErrFormat, strings.TrimSpace(p))
		}
		params[name] = value
	}
	f := Format{KDF: params["kdf"]}
	switch {
	case f.KDF == KDFNone && len(params) == 1:
		return f, nil
	case f.KDF == KDFPBKDF2 && len(params) == 2:
		n, err := parseIterations(params["iter"])
		f.Iterations = n
		return f, err
	}
	return Format{}, fmt.Errorf("%w: want kdf=%s, or kdf=%s with iter", ErrFormat, KDFNone, KDFPBKDF2)
}

// parseIterations reads a decimal iteration count without sign or leading zero, in bounds.
func parseIterations(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("%w: iter must be a whole number", ErrFormat)
	}
	if n < MinIterations || n > MaxIterations {
		return 0, fmt.Errorf("%w: iter must be from %d to %d", ErrFormat, MinIterations, MaxIterations)
	}
	return n, nil
}

// String is the format's canonical form, which is also the additional data its ciphertext is
// authenticated with: a server that changed the format would make the paste undecryptable, never
// weaker.
func (f Format) String() string {
	if f.KDF == KDFPBKDF2 {
		return "v1; kdf=" + KDFPBKDF2 + "; iter=" + strconv.Itoa(f.Iterations)
	}
	return "v1; kdf=" + KDFNone
}

// NeedsPassword reports whether opening the paste takes a password besides the link's key.
func (f Format) NeedsPassword() bool { return f.KDF == KDFPBKDF2 }

// headerSize is the length of the body before the ciphertext: the version byte, the salt if any,
// and the nonce.
func (f Format) headerSize() int {
	if f.NeedsPassword() {
		return 1 + saltSize + nonceSize
	}
	return 1 + nonceSize
}

// MinBodySize is the least a body of this format can hold: its header, an empty plaintext's
// length prefix and the tag. A server refuses shorter bodies without looking at their bytes.
func (f Format) MinBodySize() int { return f.headerSize() + metaLengthSize + tagSize }

// CheckShape reports whether body could be a paste of format f: long enough, and starting with the
// version byte. It reads nothing of the ciphertext.
func (f Format) CheckShape(body []byte) error {
	if len(body) < f.MinBodySize() || body[0] != versionByte {
		return fmt.Errorf("%w: the body is not an envelope of format v1", ErrFormat)
	}
	return nil
}
