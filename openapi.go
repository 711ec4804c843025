// Package pastebin holds the HTTP contract of the pastebin service, openapi.yaml, so the binary can
// serve it. The service itself is in cmd/pastebin and the packages beside this file.
package pastebin

import _ "embed"

// OpenAPISpec is openapi.yaml, the HTTP contract that tests check real answers against.
//
//go:embed openapi.yaml
var OpenAPISpec []byte
