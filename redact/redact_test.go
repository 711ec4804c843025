package redact_test

import (
	"testing"

	"pastebin/redact"
)

func TestCode(t *testing.T) {
	t.Parallel()
	// What the SQL of Code's comment computes: left(encode(sha256('Abcdefghijk'::bytea), 'hex'), 8).
	if got := redact.Code("Abcdefghijk"); got != "a9fe7901" {
		t.Errorf("Code(Abcdefghijk) = %q, want a9fe7901", got)
	}
}
