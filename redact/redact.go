// Package redact names secrets where they must not appear: in logs and reports. A paste's short
// code is what lets anyone read it, so a log line names a paste by a short hash of its code.
package redact

import (
	"crypto/sha256"
	"encoding/hex"
)

// Code names a paste without its code: the first 8 hex digits of the code's SHA-256, which tell
// pastes apart in a log and lead an operator who has the database back to the paste:
//
//	SELECT short_code FROM pastes WHERE left(encode(sha256(short_code::bytea), 'hex'), 8) = '<hash>';
func Code(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:4])
}
