package request

import (
	"net/http/httptest"
	"testing"
)

func TestNegotiate(t *testing.T) {
	tests := []struct {
		accept string
		html   bool
		json   bool
	}{
		{"", false, false},
		{"*/*", false, false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true, false},
		{"application/json", false, true},
		{"application/json;q=0.5, text/plain", false, false},
		{"text/plain;q=0.1, application/json", false, true},
		{"text/*", false, false},
		{"text/html;q=0", false, false},
		{"garbage;;;", false, false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.accept != "" {
			r.Header.Set("Accept", tt.accept)
		}
		if got := WantsHTML(r); got != tt.html {
			t.Errorf("Accept %q: WantsHTML = %v, want %v", tt.accept, got, tt.html)
		}
		if got := WantsJSON(r); got != tt.json {
			t.Errorf("Accept %q: WantsJSON = %v, want %v", tt.accept, got, tt.json)
		}
	}
}
