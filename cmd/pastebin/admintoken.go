package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// exampleAdminToken is the admin token an earlier README showed: copied into a deployment, it is
// the first token anyone would try.
const exampleAdminToken = "a-long-random-admin-token"

// Admin token lengths: shorter than minAdminToken is refused; shorter than goodAdminToken is
// accepted with a warning at start-up (`openssl rand -hex 32` gives 64 characters).
const (
	minAdminToken  = 16
	goodAdminToken = 32
)

// adminHash is the SHA-256 of the admin token, from the token or given as hex; nil for none. weak
// says why a token that is accepted should still be replaced ("" when nothing is wrong with it).
func adminHash(token, hexHash string) (hash []byte, weak string, err error) {
	example := sha256.Sum256([]byte(exampleAdminToken))
	switch {
	case token != "" && hexHash != "":
		return nil, "", errors.New("set the admin token or its hash, not both")
	case token == exampleAdminToken:
		return nil, "", errors.New("the admin token is the README's old example: draw one with `openssl rand -hex 32`")
	case token != "" && len(token) < minAdminToken:
		return nil, "", fmt.Errorf("the admin token must be at least %d characters: draw one with `openssl rand -hex 32`", minAdminToken)
	case token != "":
		h := sha256.Sum256([]byte(token))
		if len(token) < goodAdminToken {
			weak = fmt.Sprintf("the admin token has %d characters, fewer than %d: draw one with `openssl rand -hex 32`", len(token), goodAdminToken)
		}
		return h[:], weak, nil
	case hexHash != "":
		h, err := hex.DecodeString(hexHash)
		if err != nil || len(h) != sha256.Size {
			return nil, "", errors.New("the admin token hash must be 64 hex digits")
		}
		if bytes.Equal(h, example[:]) {
			return nil, "", errors.New("the admin token hash is the hash of the README's old example token: draw one with `openssl rand -hex 32`")
		}
		return h, "", nil
	}
	return nil, "", nil
}
