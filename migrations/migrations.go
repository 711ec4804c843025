// Package migrations holds the goose SQL migrations of the pastebin schema, embedded in the binary.
package migrations

import "embed"

// FS holds every migration file. Never edit a migration that has shipped; add a new one.
//
//go:embed *.sql
var FS embed.FS
