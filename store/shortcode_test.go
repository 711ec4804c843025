package store

import "testing"

func TestShortCodes(t *testing.T) {
	seen := map[string]bool{}
	counts := map[rune]int{}
	for i := 0; i < 2000; i++ {
		code, err := newShortCode()
		if err != nil {
			t.Fatal(err)
		}
		if !ValidShortCode(code) {
			t.Fatalf("newShortCode() = %q, which ValidShortCode refuses", code)
		}
		if seen[code] {
			t.Fatalf("code %q drawn twice", code)
		}
		seen[code] = true
		for _, r := range code {
			counts[r]++
		}
	}
	// 22,000 characters over 62 symbols: about 355 each. A biased draw (b%62 without rejection)
	// would give the first 8 symbols about 25% more.
	for r, n := range counts {
		if n < 250 || n > 470 {
			t.Errorf("symbol %q drawn %d times, want about 355", r, n)
		}
	}
	for _, bad := range []string{"", "short", "AAAAAAAAAAAA", "AAAAAAAAAA/", "AAAAAAAAAA-", "ÄAAAAAAAAA"} {
		if ValidShortCode(bad) {
			t.Errorf("ValidShortCode(%q) = true", bad)
		}
	}
}
